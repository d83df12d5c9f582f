"""The network shell's wire format: length-prefixed frames carrying impl/'s requests.

A frame is a 4-byte big-endian length and that many bytes of JSON:
``{"type": "<class name>", "fields": {...}}``.  The classes are the NamedTuples the
sans-IO core already exchanges (impl/requests.py, impl/replica_manager.py) plus the
clients' metadata, produce and consume requests defined here; nothing else decodes, so a frame
can never name code to run.  ``TopicPartition`` travels as ``[topic, partition]`` and
every other JSON list comes back as a tuple, as the core builds them.

    >>> from impl.zkclient import TopicPartition
    >>> req = ProduceRequest(TopicPartition("t", 0), "all")
    >>> frame = encode(req)
    >>> int.from_bytes(frame[:4], "big") == len(frame) - 4
    True
    >>> decode(frame[4:]) == req
    True
    >>> decode(b'{"type": "os.system", "fields": {}}')   # doctest: +IGNORE_EXCEPTION_DETAIL
    Traceback (most recent call last):
    ...
    impl.wire.WireError: unknown message type 'os.system'
"""

from __future__ import annotations

import json
import socket
import struct
from typing import NamedTuple

from impl.replica_manager import (
    FetchRequest,
    FetchResponse,
    OffsetsForLeaderEpochRequest,
    OffsetsForLeaderEpochResponse,
)
from impl.requests import LeaderAndIsrRequest, StopReplicaRequest, StopReplicaResponse, UpdateMetadataRequest
from impl.zkclient import TopicPartition

MAX_FRAME = 16 * 1024 * 1024


class WireError(Exception):
    """A frame that is not one of ours (bad length, bad JSON, unknown type or fields)."""


class MetadataRequest(NamedTuple):
    """A client's question "who leads this partition?" (Kafka's MetadataRequest).  Any
    broker answers it from its own MetadataCache (``KafkaApis.handleTopicMetadataRequest``),
    which only the controller's UpdateMetadata requests fill, not from ZooKeeper."""

    topic_partition: TopicPartition


class MetadataResponse(NamedTuple):
    error: str                     # NONE | LEADER_NOT_AVAILABLE (the cache names no leader)
    leader: int


class ProduceRequest(NamedTuple):
    """A producer's write of one record (records are identified by offset and the
    leader epoch they were written in: impl/log.py)."""

    topic_partition: TopicPartition
    acks: str                      # "all" | "1"


class ProduceResponse(NamedTuple):
    error: str
    offset: int
    leader_epoch: int


class ConsumeRequest(NamedTuple):
    """A consumer's read of everything below the HW, from the leader."""

    topic_partition: TopicPartition


class ConsumeResponse(NamedTuple):
    error: str
    records: tuple                 # leader epochs of the records at offsets 0 .. HW-1
    high_watermark: int
    leader_epoch: int


class LeaderAndIsrResponse(NamedTuple):
    broker_id: int
    error: str


class UpdateMetadataResponse(NamedTuple):
    broker_id: int
    error: str                     # NONE | STALE_CONTROLLER_EPOCH


class Ack(NamedTuple):
    """The answer to a request that needs none (a StopReplica whose response is sent separately)."""

    error: str


TYPES = {cls.__name__: cls for cls in (
    LeaderAndIsrRequest, LeaderAndIsrResponse, StopReplicaRequest, StopReplicaResponse,
    UpdateMetadataRequest, UpdateMetadataResponse, MetadataRequest, MetadataResponse,
    FetchRequest, FetchResponse, OffsetsForLeaderEpochRequest, OffsetsForLeaderEpochResponse,
    ProduceRequest, ProduceResponse, ConsumeRequest, ConsumeResponse, Ack)}


def _plain(v):
    if isinstance(v, TopicPartition):
        return [v.topic, v.partition]
    if isinstance(v, (tuple, list)):
        return [_plain(x) for x in v]
    return v


def _back(name: str, v):
    if name == "topic_partition":
        if not (isinstance(v, list) and len(v) == 2 and isinstance(v[0], str) and isinstance(v[1], int)):
            raise WireError(f"bad topic_partition {v!r}")
        return TopicPartition(v[0], v[1])
    if isinstance(v, list):
        return tuple(_back("", x) for x in v)
    if v is None or isinstance(v, (bool, int, str)):
        return v
    raise WireError(f"bad field {name}: {v!r}")


def encode(msg) -> bytes:
    cls = type(msg).__name__
    if TYPES.get(cls) is not type(msg):
        raise WireError(f"cannot encode {cls}")
    body = json.dumps({"type": cls, "fields": {k: _plain(v) for k, v in msg._asdict().items()}},
                      separators=(",", ":")).encode()
    return struct.pack(">I", len(body)) + body


def decode(body: bytes):
    try:
        obj = json.loads(body.decode())
    except (UnicodeDecodeError, ValueError) as e:
        raise WireError(f"not JSON: {e}") from None
    if not isinstance(obj, dict) or not isinstance(obj.get("fields"), dict):
        raise WireError("a frame is {\"type\": ..., \"fields\": {...}}")
    cls = TYPES.get(obj.get("type"))
    if cls is None:
        raise WireError(f"unknown message type {obj.get('type')!r}")
    fields = obj["fields"]
    if set(fields) != set(cls._fields):
        raise WireError(f"{cls.__name__} has fields {list(cls._fields)}, got {sorted(fields)}")
    return cls(**{k: _back(k, fields[k]) for k in cls._fields})


def _recv_exact(sock: socket.socket, n: int) -> bytes:
    chunks, got = [], 0
    while got < n:
        b = sock.recv(n - got)
        if not b:
            raise ConnectionError("connection closed")
        chunks.append(b)
        got += len(b)
    return b"".join(chunks)


def send(sock: socket.socket, msg) -> None:
    sock.sendall(encode(msg))


def recv(sock: socket.socket):
    (n,) = struct.unpack(">I", _recv_exact(sock, 4))
    if n > MAX_FRAME:
        raise WireError(f"frame of {n} bytes is larger than {MAX_FRAME}")
    return decode(_recv_exact(sock, n))


class Connection:
    """A client connection to one broker: one request at a time, reconnecting after an
    error.  ``call`` raises OSError (refused, reset, timed out) or WireError."""

    def __init__(self, port: int, timeout: float = 1.0) -> None:
        self.port = port
        self.timeout = timeout
        self.sock: socket.socket | None = None

    def call(self, msg, timeout: float | None = None):
        try:
            if self.sock is None:
                self.sock = socket.create_connection(("127.0.0.1", self.port), timeout=self.timeout)
            self.sock.settimeout(timeout or self.timeout)
            send(self.sock, msg)
            return recv(self.sock)
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        if self.sock is not None:
            try:
                self.sock.close()
            except OSError:
                pass
            self.sock = None
