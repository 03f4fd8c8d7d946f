"""A small program of raw pulumi-aws resources that passes every policy of the review gate.

Its role may create grants on the key for EC2 (encrypted volumes), a parliament finding the gate
accepts with a reason, which the plan lists: `gpucloud plan --program tests/programs/compliant_program.py`.
"""

import json

import pulumi_aws as aws

tags = {"Project": "good", "Owner": "team@example.com", "CostCenter": "cc-1"}

key = aws.kms.Key("volumes", enable_key_rotation=True, tags=tags)

role = aws.iam.Role(
    "nodes",
    assume_role_policy=json.dumps(
        {
            "Version": "2012-10-17",
            "Statement": [{"Effect": "Allow", "Principal": {"Service": "ec2.amazonaws.com"}, "Action": "sts:AssumeRole"}],
        }
    ),
    tags=tags,
)

aws.iam.RolePolicy(
    "nodes-use-key",
    role=role.name,
    policy=key.arn.apply(
        lambda arn: json.dumps(
            {
                "Version": "2012-10-17",
                "Statement": [
                    {"Effect": "Allow", "Action": ["kms:Decrypt", "kms:GenerateDataKey"], "Resource": arn},
                    {
                        "Effect": "Allow",
                        "Action": "kms:CreateGrant",
                        "Resource": arn,
                        "Condition": {"Bool": {"kms:GrantIsForAWSResource": "true"}},
                    },
                ],
            }
        )
    ),
)
