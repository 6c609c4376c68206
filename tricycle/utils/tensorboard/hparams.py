"""The hparams plugin's three summaries (experiment, session start, session end), encoded by
hand as torch's ``add_hparams`` makes them.

Messages (tensorboard's hparams .proto files): ``HParamsPluginData`` (version 1, experiment 2,
session_start_info 3, session_end_info 4); ``Experiment`` (hparam_infos 4, metric_infos 5);
``HParamInfo`` (name 1, type 4, domain_discrete 5: a ``ListValue``); ``MetricInfo`` (name 1:
``MetricName``, tag 2); ``SessionStartInfo`` (hparams 1: a map of name to
``google.protobuf.Value``: number_value 2, string_value 3, bool_value 4); ``SessionEndInfo``
(status 1)."""

import numbers

from tricycle.tensor import Tensor
from tricycle.utils.tensorboard import proto
from tricycle.utils.tensorboard.summaries import to_numpy

EXPERIMENT_TAG = "_hparams_/experiment"
SESSION_START_INFO_TAG = "_hparams_/session_start_info"
SESSION_END_INFO_TAG = "_hparams_/session_end_info"
FLOAT64, STRING = 3, 1  # the plugin's DataType
STATUS_SUCCESS = 1


def _value(kind: str, value) -> bytes:
    """A ``google.protobuf.Value`` holding a number or a string."""
    return proto.double(2, value) if kind == "number" else proto.data(3, value)


def _plugin_summary(tag: str, plugin_data: bytes) -> bytes:
    plugin = proto.data(1, "hparams") + proto.data(2, plugin_data)
    return proto.data(1, proto.data(1, tag) + proto.data(9, proto.data(1, plugin)))


def hparams(hparam_dict: dict, metric_dict: dict, hparam_domain_discrete: dict | None = None):
    """The encoded (experiment, session start, session end) summaries of ``hparam_dict``
    (numbers, bools (as numbers, as torch's writer records them), strings, one-element
    tensors; None is skipped) with ``metric_dict``'s names as the metrics."""
    if not isinstance(hparam_dict, dict) or not isinstance(metric_dict, dict):
        raise TypeError("add_hparams: hparam_dict and metric_dict should be dictionaries")
    domains = hparam_domain_discrete or {}
    if not isinstance(domains, dict):
        raise TypeError("add_hparams: hparam_domain_discrete should be a dictionary")
    for name, choices in domains.items():
        if (
            name not in hparam_dict
            or not isinstance(choices, list)
            or not all(isinstance(choice, type(hparam_dict[name])) for choice in choices)
        ):
            raise TypeError(
                f"add_hparams: hparam_domain_discrete[{name!r}] should be a list of the type "
                f"of hparam_dict[{name!r}]"
            )
    infos, entries = [], []
    for name, value in hparam_dict.items():
        if value is None:
            continue
        if isinstance(value, numbers.Real) and not isinstance(value, Tensor):
            kind, value = "number", float(value)
        elif isinstance(value, str):
            kind = "string"
        elif isinstance(value, Tensor):
            kind, value = "number", float(to_numpy(value).reshape(-1)[0])
        else:
            raise ValueError(
                f"add_hparams: {name!r} should be an int, float, str, bool or Tensor, got "
                f"{type(value).__name__}"
            )
        entries.append(proto.data(1, proto.data(1, name) + proto.data(2, _value(kind, value))))
        info = proto.data(1, name) + proto.integer(4, FLOAT64 if kind == "number" else STRING)
        if name in domains:
            listed = b"".join(proto.data(1, _value(kind, choice)) for choice in domains[name])
            info += proto.data(5, listed)
        infos.append(proto.data(4, info))
    metrics = [proto.data(5, proto.data(1, proto.data(2, tag))) for tag in metric_dict]
    experiment = _plugin_summary(EXPERIMENT_TAG, proto.data(2, b"".join(infos + metrics)))
    start = _plugin_summary(SESSION_START_INFO_TAG, proto.data(3, b"".join(entries)))
    end = _plugin_summary(SESSION_END_INFO_TAG, proto.data(4, proto.integer(1, STATUS_SUCCESS)))
    return experiment, start, end


__all__ = ["hparams"]
