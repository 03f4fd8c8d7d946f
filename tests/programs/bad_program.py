"""A deliberately bad Pulumi program: raw pulumi-aws resources that the review gate must stop.

Run it through the offline plan: `gpucloud plan --program tests/programs/bad_program.py`.
"""

import json

import pulumi_aws as aws

tags = {"Project": "bad", "Owner": "nobody@example.com", "CostCenter": "cc-0"}

aws.ec2.SecurityGroup(
    "world-open-ssh",
    description="ssh from anywhere",
    ingress=[{"protocol": "tcp", "from_port": 22, "to_port": 22, "cidr_blocks": ["0.0.0.0/0"]}],
    tags=tags,
)

aws.ebs.Volume("unencrypted-data", availability_zone="us-east-1a", size=100, type="gp3", tags=tags)

aws.iam.Policy(
    "admin-everything",
    policy=json.dumps({"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}]}),
    tags=tags,
)

aws.ec2.LaunchTemplate(
    "imdsv1-nodes",
    image_id=aws.ec2.get_ami(
        most_recent=True, owners=["amazon"], filters=[{"name": "architecture", "values": ["x86_64"]}, {"name": "name", "values": ["*ubuntu*"]}]
    ).id,
    metadata_options={"http_tokens": "optional"},
    tags=tags,
)
