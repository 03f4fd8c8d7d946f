"""User data for gpu-cloud GPU instances: what a node runs at boot, rendered from plain values.

`render` builds the `#cloud-config` document, whose `bootstrap_stub` fetches the agent `bundle`
from S3; `scripts` holds the fixed text the bundle installs, `layout` where everything lives on
the node.
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
