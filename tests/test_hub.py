"""``tricycle.hub`` and ``tricycle.utils.model_zoo``, served by a local HTTP server in a thread
(never the network): downloads (bytes, hash prefixes, nothing left behind on failure, errors
of torch's kinds, checked by running torch's ``download_url_to_file`` on the same server),
``load_state_dict_from_url``'s cache (one download, the hash in the file name, ``file_name``,
the directory under ``TRICYCLE_CACHE_DIR`` or ``set_dir``'s), ``load`` from a local directory
(entry points, ``dependencies``, the errors, equal to torch.hub's on the same hubconf.py), and
GitHub repositories from a stand-in of GitHub on localhost (``hub.GITHUB`` and
``hub.GITHUB_API`` pointed at it): the archive unpacked into the cache and reused, the default
branch, a fork's ref refused, the trust prompt and its list, an archive that escapes refused.
"""

import io
import json
import os
import threading
import urllib.error
import zipfile
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np
import pytest

import tricycle as tc
from tricycle import hub
from tricycle.utils import model_zoo

HUBCONF = '''
"""A test hub."""
dependencies = ["numpy"]

from helper import scale


def tiny(n=2, *, factor=1.0):
    """A list of n numbers, scaled."""
    return [scale(i, factor) for i in range(n)]


def _private():
    return None
'''
HELPER = "def scale(i, factor):\n    return i * factor\n"


class Server:
    """A local HTTP server of ``routes`` (path with query -> (status, bytes)); counts requests."""

    def __init__(self):
        self.routes: dict[str, tuple[int, bytes]] = {}
        self.requests: list[str] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802 - http.server's name
                server.requests.append(self.path)
                status, body = server.routes.get(self.path, (404, b"not found"))
                self.send_response(status)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, args=(0.01,), daemon=True)
        self.thread.start()

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def server(monkeypatch, tmp_path):
    served = Server()
    monkeypatch.setenv("TRICYCLE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(hub, "_hub_dir", None)
    monkeypatch.setattr(hub, "GITHUB", served.url)
    monkeypatch.setattr(hub, "GITHUB_API", served.url + "/api")
    yield served
    served.close()


def sha256(data: bytes) -> str:
    import hashlib  # noqa: PLC0415

    return hashlib.sha256(data).hexdigest()


# ---------------------------------------------------------------------- downloads
def test_download_writes_the_bytes_and_checks_the_hash_prefix(server, tmp_path, capsys):
    data = os.urandom(300_000)  # several chunks
    server.routes["/w.bin"] = (200, data)
    dst = tmp_path / "out" / "w.bin"
    dst.parent.mkdir()
    hub.download_url_to_file(server.url + "/w.bin", str(dst), sha256(data)[:8])
    assert dst.read_bytes() == data
    assert "100.0%" in capsys.readouterr().err  # progress on stderr
    hub.download_url_to_file(f"file://{dst}", str(tmp_path / "copy"), progress=False)
    assert (tmp_path / "copy").read_bytes() == data
    assert capsys.readouterr().err == ""


def test_failed_downloads_leave_nothing_and_raise_torchs_kinds(server, tmp_path):
    torch_hub = pytest.importorskip("torch.hub")
    server.routes["/w.bin"] = (200, b"weights")
    for library, folder in ((hub, "ours"), (torch_hub, "theirs")):
        directory = tmp_path / folder
        directory.mkdir()
        with pytest.raises(RuntimeError, match="invalid hash value"):
            library.download_url_to_file(server.url + "/w.bin", str(directory / "w"),
                                         hash_prefix="0000", progress=False)  # fmt: skip
        with pytest.raises(urllib.error.HTTPError):
            library.download_url_to_file(server.url + "/none", str(directory / "n"),
                                         progress=False)  # fmt: skip
        assert os.listdir(directory) == []  # no partial file, no temporary
    (tmp_path / "ours" / "w").write_bytes(b"old")
    with pytest.raises(RuntimeError):  # a failed download keeps the file it would replace
        hub.download_url_to_file(server.url + "/w.bin", str(tmp_path / "ours" / "w"), "0000")
    assert (tmp_path / "ours" / "w").read_bytes() == b"old"


def test_load_state_dict_from_url_downloads_once_and_checks_the_named_hash(server, tmp_path):
    state = {"weight": tc.tensor(np.arange(6.0).reshape(2, 3)), "step": 3}
    buffer = io.BytesIO()
    tc.save(state, buffer)
    data = buffer.getvalue()
    name = f"net-{sha256(data)[:10]}.pth"
    server.routes[f"/models/{name}"] = (200, data)
    server.routes["/models/bad-0123456789.pth"] = (200, data)
    loaded = hub.load_state_dict_from_url(f"{server.url}/models/{name}", check_hash=True,
                                          progress=False)  # fmt: skip
    np.testing.assert_array_equal(loaded["weight"].array, state["weight"].array)
    assert loaded["step"] == 3
    cached = tmp_path / "cache" / "hub" / "checkpoints" / name
    assert cached.is_file() and hub.get_dir() == str(tmp_path / "cache" / "hub")
    again = model_zoo.load_url(f"{server.url}/models/{name}", weights_only=True)
    np.testing.assert_array_equal(again["weight"].array, state["weight"].array)
    assert server.requests.count(f"/models/{name}") == 1  # the second came from the cache
    with pytest.raises(RuntimeError, match="invalid hash value"):
        hub.load_state_dict_from_url(f"{server.url}/models/bad-0123456789.pth", check_hash=True,
                                     progress=False)  # fmt: skip
    assert not (cached.parent / "bad-0123456789.pth").exists()
    renamed = hub.load_state_dict_from_url(f"{server.url}/models/bad-0123456789.pth",
                                           model_dir=str(tmp_path / "mine"),
                                           file_name="renamed.pt", progress=False)  # fmt: skip
    assert renamed["step"] == 3 and (tmp_path / "mine" / "renamed.pt").is_file()
    assert model_zoo.load_url is hub.load_state_dict_from_url


def test_get_dir_and_set_dir(monkeypatch, tmp_path):
    monkeypatch.setattr(hub, "_hub_dir", None)
    monkeypatch.delenv("TRICYCLE_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert hub.get_dir() == str(tmp_path / "xdg" / "tricycle" / "hub")
    monkeypatch.setenv("TRICYCLE_CACHE_DIR", str(tmp_path / "c"))
    assert hub.get_dir() == str(tmp_path / "c" / "hub")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    hub.set_dir("~/hubs")
    assert hub.get_dir() == str(tmp_path / "home" / "hubs")
    assert tc.hub.get_dir() == hub.get_dir()


# ---------------------------------------------------------------------- hubconf.py
@pytest.fixture
def repo(tmp_path):
    directory = tmp_path / "repo"
    directory.mkdir()
    (directory / "hubconf.py").write_text(HUBCONF)
    (directory / "helper.py").write_text(HELPER)
    return directory


def test_load_local_equals_torchs(repo):
    torch_hub = pytest.importorskip("torch.hub")
    for library in (hub, torch_hub):
        assert library.load(str(repo), "tiny", 3, factor=2.0, source="local") == [0.0, 2.0, 4.0]
        assert library.load(str(repo), "tiny", source="LOCAL") == [0, 1]
    bad = [
        (("tiny",), {"source": "svn"}, ValueError),
        ((3,), {"source": "local"}, ValueError),
        (("missing",), {"source": "local"}, RuntimeError),
        (("dependencies",), {"source": "local"}, RuntimeError),  # not callable
    ]
    for args, kwargs, error in bad:
        for library in (hub, torch_hub):
            with pytest.raises(error):
                library.load(str(repo), *args, **kwargs)
    (repo / "hubconf.py").write_text(HUBCONF.replace('["numpy"]', '["numpy", "no_such_pkg"]'))
    for library in (hub, torch_hub):
        with pytest.raises(RuntimeError, match="Missing dependencies: no_such_pkg"):
            library.load(str(repo), "tiny", source="local")


def archive(top: str, files: dict[str, str]) -> bytes:
    """A zip of ``files`` under the directory ``top``, as GitHub's zipball."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as z:
        z.writestr(f"{top}/", "")
        for name, text in files.items():
            z.writestr(f"{top}/{name}", text)
    return buffer.getvalue()


def github(server, ref="main", branches=("main",), has_main=True):
    """Serve the repository alice/models at ``ref`` as GitHub would."""
    files = {"hubconf.py": HUBCONF, "helper.py": HELPER}
    server.routes[f"/alice/models/zipball/{ref}"] = (200, archive("alice-models-abc1234", files))
    if has_main:
        server.routes["/alice/models/tree/main/"] = (200, b"<html>")
    listing = [{"name": b, "commit": {"sha": "abc1234" + "0" * 33}} for b in branches]
    for kind, entries in (("branches", listing), ("tags", [])):
        query = f"/api/repos/alice/models/{kind}?per_page=100&page="
        server.routes[query + "1"] = (200, json.dumps(entries).encode())
        server.routes[query + "2"] = (200, b"[]")


def test_load_from_github_unpacks_into_the_cache_and_reuses_it(server, capsys):
    github(server)
    model = hub.load("alice/models", "tiny", 2, factor=3.0, trust_repo=True)
    assert model == [0.0, 3.0]
    repo_dir = os.path.join(hub.get_dir(), "alice_models_main")
    assert os.path.isfile(os.path.join(repo_dir, "hubconf.py"))
    assert sorted(os.listdir(hub.get_dir())) == ["alice_models_main", "trusted_list"]
    with open(os.path.join(hub.get_dir(), "trusted_list")) as f:
        assert f.read() == "alice_models\n"
    assert hub.list("alice/models:main") == ["scale", "tiny"]  # hubconf's public callables
    assert hub.help("alice/models", "tiny") == "A list of n numbers, scaled."
    assert "Using cache found in" in capsys.readouterr().err
    assert server.requests.count("/alice/models/zipball/main") == 1
    hub.load("alice/models", "tiny", force_reload=True, verbose=False)
    assert server.requests.count("/alice/models/zipball/main") == 2


def test_github_default_branch_forks_and_bad_names(server):
    github(server, ref="master", branches=("master",), has_main=False)
    assert hub.load("alice/models", "tiny", 1, trust_repo=True) == [0]  # no main: master
    assert os.path.isdir(os.path.join(hub.get_dir(), "alice_models_master"))
    server.routes["/alice/models/zipball/fork-sha"] = server.routes["/alice/models/zipball/master"]
    with pytest.raises(ValueError, match="cannot find fork-sha"):
        hub.load("alice/models:fork-sha", "tiny", trust_repo=True)
    assert hub.load("alice/models:fork-sha", "tiny", trust_repo=True, skip_validation=True) == [
        0,
        1,
    ]
    with pytest.raises(ValueError, match="owner/name"):
        hub.load("alice-models", "tiny")


def test_trust_prompt_and_list(server, monkeypatch):
    github(server)
    answers = iter(["n", "maybe", "y"])
    prompts = []
    monkeypatch.setattr("builtins.input", lambda text: prompts.append(text) or next(answers))
    with pytest.raises(Exception, match="Untrusted repository"):  # noqa: PT011 - torch's kind
        hub.load("alice/models", "tiny")
    with pytest.raises(ValueError, match="unrecognized response"):
        hub.load("alice/models", "tiny")
    assert hub.load("alice/models", "tiny") == [0, 1]
    assert "alice_models does not belong to the list of trusted" in prompts[0]
    assert hub.load("alice/models", "tiny") == [0, 1]  # trusted now: no prompt
    assert len(prompts) == 3


def test_archive_that_escapes_the_cache_is_refused(server, tmp_path):
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as z:
        z.writestr("top/", "")
        z.writestr("../evil.py", "x = 1")
    github(server)
    server.routes["/alice/models/zipball/main"] = (200, buffer.getvalue())
    with pytest.raises(ValueError, match="leads outside"):
        hub.load("alice/models", "tiny", trust_repo=True)
    assert not (tmp_path / "cache" / "evil.py").exists()
