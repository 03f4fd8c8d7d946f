"""Node agent that runs on each GPU instance: boot, health gate, GPU watch, tuning, checkpoint-and-drain.

It uses only the standard library and boto3 (imported lazily, so `check` runs where boto3 is absent),
because it runs on the image's own Python from the agent bundle (gpucloud.userdata.bundle), with
nothing installed from a package index.
"""
