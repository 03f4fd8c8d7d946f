"""Node agent that runs on each GPU instance: health gate at boot, checkpoint-and-drain on termination.

It uses only the standard library and boto3 (imported lazily, so `check` runs where boto3 is absent),
because it is shipped inside the instance's user data rather than installed from a package index.
"""
