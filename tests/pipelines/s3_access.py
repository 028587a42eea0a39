"""Principals of the loopback S3 server (tests/pipelines/s3_server.py) with their own rights:
one that may do anything in S3 (the driver's), one that may only read and list (a node
whose instance profile or credentials lack write access).

Built with moto's own IAM-like access control (moto's docs, docs/docs/iam.rst, "IAM-like
Access Control"): the users, policies and access keys are created through moto's IAM API
while the server still authenticates nothing, then a POST of 0 to `/moto-api/reset-auth`
(what moto's `set_initial_no_auth_action_count` sends a server, moto 5.2.5's
moto/moto_api/_internal/responses.py) makes it authenticate and authorize every request
from then on: a write signed with the reader's key is answered 403 AccessDenied, as S3
answers one its IAM policy does not allow, and a key moto does not know (the server's
default `testing`) InvalidAccessKeyId.
"""

from __future__ import annotations

import json
import urllib.request
from dataclasses import dataclass
from typing import Any

from tests.pipelines.s3_server import ACCESS_KEY, REGION, SECRET_KEY, S3Server

READ_ONLY = ["s3:GetObject", "s3:ListBucket"]


@dataclass(frozen=True)
class Principal:
    """An IAM user's access key, and the environment that hands it to a process or node."""

    key_id: str
    secret: str

    def env(self) -> dict[str, str]:
        """AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY for this principal."""
        return {"AWS_ACCESS_KEY_ID": self.key_id, "AWS_SECRET_ACCESS_KEY": self.secret}


def _user(iam: Any, name: str, actions: list[str]) -> Principal:
    statement = {"Effect": "Allow", "Action": actions, "Resource": "*"}
    policy = json.dumps({"Version": "2012-10-17", "Statement": [statement]})
    iam.create_user(UserName=name)
    iam.put_user_policy(UserName=name, PolicyName=f"{name}-s3", PolicyDocument=policy)
    key = iam.create_access_key(UserName=name)["AccessKey"]
    return Principal(key["AccessKeyId"], key["SecretAccessKey"])


def writer_and_reader(server: S3Server) -> tuple[Principal, Principal]:
    """(a user allowed s3:*, a user allowed only to read and list), then access control on:
    from here every request to `server` must be signed by one of them."""
    import boto3

    url = f"http://{server.endpoint}"
    iam = boto3.client("iam", endpoint_url=url, region_name=REGION,
                       aws_access_key_id=ACCESS_KEY, aws_secret_access_key=SECRET_KEY)  # fmt: skip
    writer = _user(iam, "writer", ["s3:*"])
    reader = _user(iam, "reader", READ_ONLY)
    # A body of text: a form content type would leave moto's request.data empty (HTTP 500).
    enforce = urllib.request.Request(
        f"{url}/moto-api/reset-auth", data=b"0", method="POST",
        headers={"Content-Type": "text/plain"},
    )  # fmt: skip
    with urllib.request.urlopen(enforce, timeout=30) as answer:
        assert json.loads(answer.read())["status"] == "ok"
    return writer, reader
