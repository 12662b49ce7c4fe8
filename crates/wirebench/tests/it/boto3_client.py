"""Drives the fake S3 server with the AWS SDK for Python (boto3): header
SigV4 signatures, the SDK's checksums and chunked uploads, every operation
the fake server claims. Usage: boto3_client.py ENDPOINT_URL KEY SECRET."""

import sys

import boto3
from botocore.config import Config
from botocore.exceptions import ClientError

url, key, secret = sys.argv[1:4]
s3 = boto3.client("s3", endpoint_url=url, aws_access_key_id=key, aws_secret_access_key=secret,
                  region_name="us-east-1", config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1}))

s3.create_bucket(Bucket="sdk")
s3.head_bucket(Bucket="sdk")
body = b"x" * 100_000
s3.put_object(Bucket="sdk", Key="a/1", Body=body)
assert s3.head_object(Bucket="sdk", Key="a/1")["ContentLength"] == len(body)
got = s3.get_object(Bucket="sdk", Key="a/1")["Body"].read()
assert got == b"\0" * len(body), "reads are zeroes of the stored size"
part = s3.get_object(Bucket="sdk", Key="a/1", Range="bytes=10-19")
assert part["ContentRange"] == f"bytes 10-19/{len(body)}" and len(part["Body"].read()) == 10
s3.put_object(Bucket="sdk", Key="a/2", Body=b"y")
# Keys before and after the prefix in key order are never listed.
s3.put_object(Bucket="sdk", Key="0-before", Body=b"")
s3.put_object(Bucket="sdk", Key="b-after", Body=b"")
keys = [o["Key"] for o in s3.list_objects_v2(Bucket="sdk", Prefix="a/")["Contents"]]
assert keys == ["a/1", "a/2"], keys
page = s3.list_objects_v2(Bucket="sdk", Prefix="a/", MaxKeys=1)
assert page["IsTruncated"] and [o["Key"] for o in page["Contents"]] == ["a/1"]
rest = s3.list_objects_v2(Bucket="sdk", Prefix="a/", ContinuationToken=page["NextContinuationToken"])
assert [o["Key"] for o in rest["Contents"]] == ["a/2"]

up = s3.create_multipart_upload(Bucket="sdk", Key="big")["UploadId"]
parts = []
for n in (1, 2):
    size = 5 * 1024 * 1024 if n == 1 else 1234
    e = s3.upload_part(Bucket="sdk", Key="big", UploadId=up, PartNumber=n, Body=b"z" * size)["ETag"]
    parts.append({"PartNumber": n, "ETag": e})
s3.complete_multipart_upload(Bucket="sdk", Key="big", UploadId=up, MultipartUpload={"Parts": parts})
assert s3.head_object(Bucket="sdk", Key="big")["ContentLength"] == 5 * 1024 * 1024 + 1234
up = s3.create_multipart_upload(Bucket="sdk", Key="gone")["UploadId"]
s3.abort_multipart_upload(Bucket="sdk", Key="gone", UploadId=up)

# The SDK's presigned URLs (query-string signatures, which the server
# checks on its fast path): taken as they are, refused when altered or
# expired.
import time
import urllib.error
import urllib.request

v4 = boto3.client("s3", endpoint_url=url, aws_access_key_id=key, aws_secret_access_key=secret, region_name="us-east-1",
                  config=Config(signature_version="s3v4", s3={"addressing_style": "path"}, retries={"max_attempts": 1}))
get = v4.generate_presigned_url("get_object", Params={"Bucket": "sdk", "Key": "a/2"}, ExpiresIn=600)
assert "X-Amz-Signature=" in get, get
assert urllib.request.urlopen(get, timeout=10).read() == b"\0", "a presigned GET"
put = v4.generate_presigned_url("put_object", Params={"Bucket": "sdk", "Key": "a/3 x+y"}, ExpiresIn=600)
req = urllib.request.Request(put, data=b"abc", method="PUT")
assert urllib.request.urlopen(req, timeout=10).status == 200, "a presigned PUT"
assert s3.head_object(Bucket="sdk", Key="a/3 x+y")["ContentLength"] == 3
listing = v4.generate_presigned_url("list_objects_v2", Params={"Bucket": "sdk", "Prefix": "a/"}, ExpiresIn=600)
assert urllib.request.urlopen(listing, timeout=10).read().count(b"<Key>") == 3, "a presigned list"
short = v4.generate_presigned_url("get_object", Params={"Bucket": "sdk", "Key": "a/2"}, ExpiresIn=1)
time.sleep(2.5)  # past its expiry
for bad, why in [(get.replace("a/2", "a/1"), "another key"), (get[:-1] + ("0" if get[-1] != "0" else "1"), "another signature"),
                 (short, "expired")]:
    try:
        urllib.request.urlopen(bad, timeout=10)
        sys.exit(f"a presigned URL with {why} was accepted")
    except urllib.error.HTTPError as e:
        assert e.code == 403, (why, e.code)
s3.delete_object(Bucket="sdk", Key="a/3 x+y")

assert len(s3.list_objects_v2(Bucket="sdk")["Contents"]) == 5, "every key without a prefix"
s3.delete_object(Bucket="sdk", Key="a/1")
try:
    s3.head_object(Bucket="sdk", Key="a/1")
    sys.exit("a deleted object is still there")
except ClientError as e:
    assert e.response["Error"]["Code"] in ("404", "NoSuchKey"), e.response
try:
    boto3.client("s3", endpoint_url=url, aws_access_key_id=key, aws_secret_access_key="wrong",
                 region_name="us-east-1").list_objects_v2(Bucket="sdk")
    sys.exit("a wrong secret was accepted")
except ClientError as e:
    assert e.response["Error"]["Code"] == "SignatureDoesNotMatch", e.response
print("ok")
