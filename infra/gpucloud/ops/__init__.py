"""Commands that act on a live AWS account with the user's credentials, kept apart from the plan
path: nothing here runs inside the Pulumi program or the offline plan."""
