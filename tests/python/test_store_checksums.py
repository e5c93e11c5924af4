"""The checksums stores keep for whole objects, checked on download without validate_hash
(src/storage/http/store_checksum.h): here S3's x-amz-checksum-crc32, on moto's S3 server,
uploaded with Debian's boto3."""

import uuid

import ferry
from conftest import write_samples

SAMPLES = 400


def _upload(moto, folder, names, prefix, **extra):
    import boto3

    s3 = boto3.client("s3", endpoint_url=moto["endpoint"], aws_access_key_id=moto["key"],
                      aws_secret_access_key=moto["secret"], region_name="us-east-1")
    for name in names:
        # SSE-KMS: the ETag of such an object is not its MD5, so only a CRC can vouch for it.
        s3.put_object(Bucket=moto["bucket"], Key=f"{prefix}/{name}",
                      Body=(folder / name).read_bytes(), ServerSideEncryption="aws:kms",
                      SSEKMSKeyId="alias/ferry-test", **(extra if name.startswith("shard.") else {}))


def test_the_crc_s3_keeps_vouches_for_each_download(moto, tmp_path):
    names = write_samples(tmp_path / "src", SAMPLES,
                          lambda i: bytes([i % 251]) * (97 + i % 50), 1 << 14)
    shards = [n for n in names if n.startswith("shard.")]
    assert len(shards) > 3
    run = uuid.uuid4().hex[:12]
    checked = {}
    for kind, extra in (("crc32", {"ChecksumAlgorithm": "CRC32"}), ("none", {})):
        prefix = f"python/checksums/{run}/{kind}"
        _upload(moto, tmp_path / "src", names, prefix, **extra)
        before = ferry.metrics()
        dataset = ferry.StreamingDataset(remote=f"s3://{moto['bucket']}/{prefix}",
                                         local=str(tmp_path / kind), shuffle=False,
                                         batch_size=8)
        assert sorted(sample["id"] for sample in dataset) == list(range(SAMPLES))
        after = ferry.metrics()
        checked[kind] = {name: after.get(name, 0) - before.get(name, 0) for name in (
            "/ferry/cache/checksummed_downloads", "/ferry/cache/checksum_failures",
            "/ferry/cache/downloads")}
    # Every shard's CRC32 matched its bytes; without one nothing could vouch for them.
    assert checked["crc32"] == {"/ferry/cache/checksummed_downloads": len(shards),
                                "/ferry/cache/checksum_failures": 0,
                                "/ferry/cache/downloads": len(shards)}
    assert checked["none"]["/ferry/cache/checksummed_downloads"] == 0
    assert checked["none"]["/ferry/cache/checksum_failures"] == 0
