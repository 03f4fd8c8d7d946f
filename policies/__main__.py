"""Entry point of the gpu-cloud policy pack (run by the Pulumi engine).

The engine runs this file with run_name "__main__"; the policies themselves live in
gpucloud.policy.crossguard so tests (and a team's own pack, as `gpucloud init` writes it) import
them without starting the analyzer server that PolicyPack(...) runs.
"""

from pulumi_policy import PolicyPack

from gpucloud.policy.crossguard import PACK_NAME, POLICIES

if __name__ == "__main__":
    PolicyPack(name=PACK_NAME, policies=POLICIES)
