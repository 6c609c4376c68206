"""torch.hub: weights and models published at a URL or in a GitHub repository.

``download_url_to_file(url, dst, hash_prefix)`` writes a temporary file beside ``dst`` and
renames it into place only once complete (``tricycle.atomic``): a failed or interrupted
download, or one whose SHA-256 does not start with ``hash_prefix`` (a RuntimeError), leaves
nothing behind. ``load_state_dict_from_url`` keeps such downloads in ``get_dir()/checkpoints``
under the URL's file name (``file_name`` to rename it), downloads only what is not there yet,
checks the hash prefix a name such as ``resnet18-5c106cde.pth`` carries (``check_hash``), and
loads the file with ``tricycle.load``. The hub directory is ``set_dir``'s, else ``hub`` in
tricycle's cache (``$TRICYCLE_CACHE_DIR``, else ``$XDG_CACHE_HOME/tricycle``, else
``~/.cache/tricycle``: the rule of ``tricycle_datasets.download``, which the library may not
import).

``load(repo_or_dir, model, *args, source=..., **kwargs)`` calls the entry point ``model`` of a
``hubconf.py``: in the directory ``repo_or_dir`` (``source="local"``) or at the top of the
GitHub repository ``"owner/name[:ref]"`` (``source="github"``, the default), whose archive is
downloaded from ``GITHUB`` and unpacked into ``get_dir()/owner_name_ref`` once, then reused
until ``force_reload``. ``ref`` defaults to ``main`` where the repository has it, else
``master``; unless ``skip_validation``, the ref must be one of the repository's branches or
tags (a fork's commit is refused). A repository is run only when trusted, as torch's:
``trust_repo=True`` trusts it, ``"check"`` (the default) asks on the terminal unless it is in
``get_dir()/trusted_list``, was downloaded before, or belongs to torch's trusted owners, and
``False`` always asks; a yes adds it to the list. ``hubconf.py``'s ``dependencies`` (package
names) must all be importable. ``list`` names the entry points (callables not starting with
``_``) and ``help`` returns one's docstring. torch's zip files of one legacy checkpoint and its
``GITHUB_TOKEN`` are left out; ``progress`` prints the bytes or the share done on stderr.
"""

import builtins
import contextlib
import hashlib
import importlib.util
import json
import os
import re
import shutil
import sys
import urllib.error
import urllib.parse
import urllib.request
import zipfile
from pathlib import Path

from tricycle import serialization
from tricycle.atomic import atomic_write

__all__ = ["download_url_to_file", "get_dir", "help", "list", "load",
           "load_state_dict_from_url", "set_dir"]  # fmt: skip

GITHUB = "https://github.com"  # where repositories' archives and branches are read
GITHUB_API = "https://api.github.com"  # where their branches and tags are listed
TRUSTED_OWNERS = ("facebookresearch", "facebookincubator", "pytorch", "fairinternal")
HASH_IN_NAME = re.compile(r"-([a-f0-9]*)\.")  # "name-<sha256 prefix>.ext"
HUBCONF = "hubconf.py"
CHUNK_BYTES = 128 * 1024

_hub_dir: str | None = None  # set_dir's


def get_dir() -> str:
    """torch.hub.get_dir: the directory of downloaded repositories and checkpoints."""
    if _hub_dir is not None:
        return _hub_dir
    if os.environ.get("TRICYCLE_CACHE_DIR"):
        cache = os.path.expanduser(os.environ["TRICYCLE_CACHE_DIR"])
    else:
        cache = os.path.join(os.path.expanduser(os.environ.get("XDG_CACHE_HOME") or "~/.cache"),
                             "tricycle")  # fmt: skip
    return os.path.join(cache, "hub")


def set_dir(d: str | os.PathLike) -> None:
    """torch.hub.set_dir: ``get_dir`` answers ``d`` (with ``~`` expanded) from now on."""
    global _hub_dir
    _hub_dir = os.path.expanduser(os.fspath(d))


# ---------------------------------------------------------------------- downloads
def download_url_to_file(url: str, dst: str, hash_prefix: str | None = None,
                         progress: bool = True) -> None:  # fmt: skip
    """torch.hub.download_url_to_file: the bytes at ``url`` as the file ``dst``, whose SHA-256
    must start with ``hash_prefix`` when given (see the module's doc)."""
    dst = os.path.expanduser(os.fspath(dst))
    request = urllib.request.Request(url, headers={"User-Agent": "tricycle.hub"})
    digest = hashlib.sha256()
    with urllib.request.urlopen(request) as response, atomic_write(dst) as file:
        size = response.headers.get("Content-Length")
        done = 0
        while chunk := response.read(CHUNK_BYTES):
            file.write(chunk)
            digest.update(chunk)
            done += len(chunk)
            if progress:
                shown = f"{100 * done / int(size):.1f}%" if size else f"{done} bytes"
                sys.stderr.write(f"\r{shown}")
        if progress:
            sys.stderr.write("\n")
        if hash_prefix is not None and not digest.hexdigest().startswith(hash_prefix):
            # raised inside atomic_write: the temporary file is removed, dst is untouched
            got = digest.hexdigest()
            raise RuntimeError(f'download_url_to_file: invalid hash value (expected '
                               f'"{hash_prefix}", got "{got}") for {url}')  # fmt: skip


def load_state_dict_from_url(url: str, model_dir: str | None = None, map_location=None,
                             progress: bool = True, check_hash: bool = False,
                             file_name: str | None = None, weights_only: bool = False):  # fmt: skip
    """torch.hub.load_state_dict_from_url: the object saved at ``url``, downloaded once into
    ``model_dir`` (``get_dir()/checkpoints``) and loaded with ``tricycle.load(...,
    map_location, weights_only)``; ``weights_only`` is False by default, as torch's here."""
    model_dir = os.path.join(get_dir(), "checkpoints") if model_dir is None else model_dir
    os.makedirs(model_dir, exist_ok=True)
    name = file_name if file_name is not None else os.path.basename(urllib.parse.urlparse(url).path)
    cached = os.path.join(model_dir, name)
    if not os.path.exists(cached):
        sys.stdout.write(f'Downloading: "{url}" to {cached}\n')
        found = HASH_IN_NAME.search(name) if check_hash else None
        download_url_to_file(url, cached, found.group(1) if found else None, progress=progress)
    return serialization.load(cached, map_location=map_location, weights_only=weights_only)


# ---------------------------------------------------------------------- GitHub repositories
def _default_ref(owner: str, name: str) -> str:
    """``main`` if the repository has that branch, else ``master``; offline, the one of the
    two already in the cache."""
    try:
        with urllib.request.urlopen(f"{GITHUB}/{owner}/{name}/tree/main/"):
            return "main"
    except urllib.error.HTTPError as error:
        if error.code == 404:
            return "master"
        raise
    except urllib.error.URLError as error:
        for ref in ("main", "master"):
            if os.path.exists(os.path.join(get_dir(), f"{owner}_{name}_{ref}")):
                return ref
        raise RuntimeError(f"hub: no connection to {GITHUB}, and {owner}/{name} is not in the "
                           f"cache ({get_dir()})") from error  # fmt: skip


def _repo_info(github: str) -> tuple[str, str, str]:
    """(owner, name, ref) of ``"owner/name[:ref]"``."""
    match = (
        re.fullmatch(r"([^/:]+)/([^/:]+)(?::(.+))?", github) if isinstance(github, str) else None
    )
    if match is None:
        raise ValueError(f"hub: a GitHub repository is 'owner/name[:ref]', got {github!r}")
    owner, name, ref = match.groups()
    return owner, name, ref if ref is not None else _default_ref(owner, name)


def _validate_not_a_fork(owner: str, name: str, ref: str) -> None:
    """Refuse a ``ref`` that is none of the repository's branches or tags (nor the start of
    their commits): it may be a fork's commit, which would run the fork's code."""
    for kind in ("branches", "tags"):
        page = 1
        while True:
            url = f"{GITHUB_API}/repos/{owner}/{name}/{kind}?per_page=100&page={page}"
            request = urllib.request.Request(
                url, headers={"Accept": "application/vnd.github.v3+json"}
            )
            with urllib.request.urlopen(request) as response:
                entries = json.loads(response.read().decode("utf-8"))
            if not entries:
                break
            if any(e["name"] == ref or e["commit"]["sha"].startswith(ref) for e in entries):
                return
            page += 1
    raise ValueError(f"hub: cannot find {ref} in {GITHUB}/{owner}/{name}; a commit of a forked "
                     "repository is loaded from the fork itself")  # fmt: skip


def _check_trusted(owner: str, name: str, owner_name_ref: str, trust_repo) -> None:
    """Ask before running an untrusted repository's code (see the module's doc)."""
    hub_dir = get_dir()
    listed = os.path.join(hub_dir, "trusted_list")
    Path(listed).touch()
    with open(listed) as file:
        trusted = {line.strip() for line in file}
    owner_name = f"{owner}_{name}"
    is_trusted = (owner_name in trusted or os.path.isdir(os.path.join(hub_dir, owner_name_ref))
                  or owner in TRUSTED_OWNERS)  # fmt: skip
    if trust_repo is False or (trust_repo == "check" and not is_trusted):
        answer = builtins.input(
            f"The repository {owner_name} does not belong to the list of trusted repositories "
            "and as such cannot be downloaded. Do you trust this repository and wish to add it "
            "to the trusted list of repositories (y/N)?"
        ).lower()
        if answer in ("y", "yes"):
            if is_trusted:
                print("The repository is already trusted.")
        elif answer in ("n", "no", ""):
            raise Exception("Untrusted repository.")  # noqa: TRY002 - torch's kind
        else:
            raise ValueError(f"hub: unrecognized response {answer!r} (y or n)")
    if not is_trusted:
        with open(listed, "a") as file:
            file.write(owner_name + "\n")


def _extract(archive: zipfile.ZipFile, into: str) -> str:
    """Unpack ``archive`` into ``into`` (every entry must land inside it); returns the path
    of its first entry, the repository's top directory."""
    root = Path(into).resolve()
    for member in archive.infolist():
        target = (root / member.filename).resolve()
        if Path(member.filename).is_absolute() or not target.is_relative_to(root):
            raise ValueError(f"hub: archive entry {member.filename!r} leads outside {root}")
    archive.extractall(root)
    return os.path.join(into, archive.infolist()[0].filename)


def _remove(path: str) -> None:
    if os.path.isdir(path) and not os.path.islink(path):
        shutil.rmtree(path)
    elif os.path.lexists(path):
        os.remove(path)


def _get_cache_or_reload(github: str, force_reload: bool, trust_repo, verbose: bool = True,
                         skip_validation: bool = False) -> str:  # fmt: skip
    """The directory of the repository's code, downloaded and unpacked unless cached."""
    hub_dir = get_dir()
    os.makedirs(hub_dir, exist_ok=True)
    owner, name, ref = _repo_info(github)
    safe_ref = ref.replace("/", "_")  # a branch name may hold "/", a directory name not
    repo_dir = os.path.join(hub_dir, f"{owner}_{name}_{safe_ref}")
    _check_trusted(owner, name, f"{owner}_{name}_{safe_ref}", trust_repo)
    if not force_reload and os.path.exists(repo_dir):
        if verbose:
            sys.stderr.write(f"Using cache found in {repo_dir}\n")
        return repo_dir
    if not skip_validation:
        _validate_not_a_fork(owner, name, ref)
    archive = os.path.join(hub_dir, f"{safe_ref}.zip")
    _remove(archive)
    url = f"{GITHUB}/{owner}/{name}/zipball/{ref}"
    sys.stdout.write(f'Downloading: "{url}" to {archive}\n')
    download_url_to_file(url, archive, progress=False)
    with zipfile.ZipFile(archive) as unpacked:
        _remove(os.path.join(hub_dir, unpacked.infolist()[0].filename))
        extracted = _extract(unpacked, hub_dir)
    _remove(archive)
    _remove(repo_dir)
    shutil.move(extracted, repo_dir)
    return repo_dir


# ---------------------------------------------------------------------- hubconf.py
@contextlib.contextmanager
def _on_sys_path(path: str):
    """``path`` first on ``sys.path`` within the block (hubconf.py imports its own modules)."""
    sys.path.insert(0, path)
    try:
        yield
    finally:
        sys.path.remove(path)


def _hubconf(directory: str):
    """The module of ``directory``'s hubconf.py, executed with the directory on sys.path."""
    path = os.path.join(directory, HUBCONF)
    if not os.path.isfile(path):
        raise FileNotFoundError(f"hub: no {HUBCONF} in {directory}")
    with _on_sys_path(directory):
        spec = importlib.util.spec_from_file_location(HUBCONF, path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    return module


def _entry(hubconf, model: str):
    """The entry point ``model`` of ``hubconf``, once its dependencies are importable."""
    if not isinstance(model, str):
        raise ValueError("Invalid input: model should be a string of function name")
    missing = [package for package in getattr(hubconf, "dependencies", None) or []
               if importlib.util.find_spec(package) is None]  # fmt: skip
    if missing:
        raise RuntimeError(f"Missing dependencies: {', '.join(missing)}")
    entry = getattr(hubconf, model, None)
    if entry is None or not callable(entry):
        raise RuntimeError(f"Cannot find callable {model} in hubconf")
    return entry


def list(github: str, force_reload: bool = False, skip_validation: bool = False,  # noqa: A001
         trust_repo="check", verbose: bool = True) -> builtins.list[str]:  # fmt: skip
    """torch.hub.list: the names of the repository's entry points."""
    hubconf = _hubconf(_get_cache_or_reload(github, force_reload, trust_repo, verbose,
                                            skip_validation))  # fmt: skip
    return [n for n in dir(hubconf) if callable(getattr(hubconf, n)) and not n.startswith("_")]


def help(github: str, model: str, force_reload: bool = False,  # noqa: A001
         skip_validation: bool = False, trust_repo="check") -> str | None:  # fmt: skip
    """torch.hub.help: the docstring of the repository's entry point ``model``."""
    directory = _get_cache_or_reload(github, force_reload, trust_repo, True, skip_validation)
    return _entry(_hubconf(directory), model).__doc__


def load(repo_or_dir: str, model: str, *args, source: str = "github", trust_repo="check",
         force_reload: bool = False, verbose: bool = True, skip_validation: bool = False,
         **kwargs):  # fmt: skip
    """torch.hub.load: ``model(*args, **kwargs)``, the entry point of the hubconf.py of a
    GitHub repository or a local directory (see the module's doc)."""
    source = source.lower() if isinstance(source, str) else source
    if source not in ("github", "local"):
        raise ValueError(f'Unknown source: "{source}". Allowed values: "github" | "local".')
    if source == "github":
        repo_or_dir = _get_cache_or_reload(repo_or_dir, force_reload, trust_repo, verbose,
                                           skip_validation)  # fmt: skip
    return _entry(_hubconf(repo_or_dir), model)(*args, **kwargs)
