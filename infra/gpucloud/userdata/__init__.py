"""User data for gpu-cloud GPU instances: what a node runs at boot, rendered from plain values.

`render` builds the `#cloud-config` document; `scripts` holds the fixed text it writes, `layout`
where everything lives on the node, `agent_source` the node agent as shipped.
"""

from gpucloud.userdata.layout import USER_DATA_LIMIT_BYTES
from gpucloud.userdata.render import (
    NodeBootstrap,
    UserDataTooLarge,
    instance_type_has_nvlink,
    instance_type_has_nvswitch,
    render_user_data,
    user_data_base64,
)

__all__ = [
    "USER_DATA_LIMIT_BYTES",
    "NodeBootstrap",
    "UserDataTooLarge",
    "instance_type_has_nvlink",
    "instance_type_has_nvswitch",
    "render_user_data",
    "user_data_base64",
]
