"""Entry point of the gpu-cloud policy pack (run by the Pulumi engine).

The engine runs this file with run_name "__main__" and this directory on sys.path;
the policies themselves live in gpucloud_pack.py so tests can import them without
starting the analyzer server that PolicyPack(...) runs.
"""

from gpucloud_pack import PACK_NAME, POLICIES
from pulumi_policy import PolicyPack

if __name__ == "__main__":
    PolicyPack(name=PACK_NAME, policies=POLICIES)
