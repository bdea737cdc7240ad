#!/usr/bin/env python3
"""Subscribe to a HapticNav bus and print every decoded message: a second-language client of docs/PROTOCOL.md.

    python3 tools/hapticnav_listen.py --connect ipc:///tmp/hapticnav-demo/source.sock [--count N] [--json]

Needs pyzmq (`pip install pyzmq`). Written from docs/PROTOCOL.md alone; it imports nothing of HapticNav.
"""
import argparse
import json
import os
import struct
import sys
import time

import zmq

SCHEMA_VERSION = 1
HEARTBEAT_TOPIC = b"_hb"


class Truncated(Exception):
    pass


class Reader:
    """Little-endian reader over one frame; every read checks the length."""

    def __init__(self, data):
        self.data = data
        self.offset = 0

    def take(self, n):
        if self.offset + n > len(self.data):
            raise Truncated(f"needed {n} bytes at offset {self.offset}, {len(self.data) - self.offset} left")
        chunk = self.data[self.offset:self.offset + n]
        self.offset += n
        return chunk

    def u8(self):
        return self.take(1)[0]

    def u16(self):
        return struct.unpack("<H", self.take(2))[0]

    def u32(self):
        return struct.unpack("<I", self.take(4))[0]

    def u64(self):
        return struct.unpack("<Q", self.take(8))[0]

    def i64(self):
        return struct.unpack("<q", self.take(8))[0]

    def f64(self):
        return struct.unpack("<d", self.take(8))[0]

    def opt_f64(self):
        present = self.u8()
        if present not in (0, 1):
            raise ValueError(f"presence byte {present}")
        return self.f64() if present else None

    def boolean(self):
        value = self.u8()
        if value not in (0, 1):
            raise ValueError(f"boolean byte {value}")
        return value == 1

    def string(self):
        return self.take(self.u16()).decode("utf-8")

    def enum(self, names):
        value = self.u8()
        if value >= len(names):
            raise ValueError(f"unknown enum case {value}")
        return names[value]

    def done(self):
        if self.offset != len(self.data):
            raise ValueError(f"{len(self.data) - self.offset} trailing bytes")


HEADING_REFERENCE = ["trueNorth", "magneticNorth"]
WAYPOINT_KIND = ["start", "turn", "arrival"]
ROUTE_STATE = ["onRoute", "offRoute", "rerouting", "arrived", "wrongWay"]
TARGET_KIND = ["lookAhead", "waypoint", "arrived", "none"]
CUE_KIND = ["silent", "turnLeft", "turnRight", "turnAround", "arrival", "signalLost", "calibration"]
CALIBRATION_STEP = ["findNorth", "putAway", "move", "done", "aborted"]
STAGE_HEALTH = ["starting", "running", "degraded", "stale", "endOfStream", "stopping", "failed"]
CONTROL_COMMAND = ["stop", "resume", "mark"]
TURN_PHASE = ["announce", "now", "straightOn"]


def coordinate(r):
    return {"latitude": r.f64(), "longitude": r.f64()}


def without_none(d):
    return {k: v for k, v in d.items() if v is not None}


def fix(r):
    return without_none({"timeSeconds": r.f64(), "latitude": r.f64(), "longitude": r.f64(),
                         "altitudeMeters": r.opt_f64(), "horizontalAccuracyMeters": r.f64(),
                         "speedMetersPerSecond": r.opt_f64(), "courseDegrees": r.opt_f64()})


def heading(r):
    return without_none({"timeSeconds": r.f64(), "headingDegrees": r.f64(), "reference": r.enum(HEADING_REFERENCE),
                         "accuracyDegrees": r.opt_f64()})


def attitude(r):
    return {"timeSeconds": r.f64(), "pitchDegrees": r.f64(), "rollDegrees": r.f64()}


def smoothed(r):
    return without_none({"timeSeconds": r.f64(), "latitude": r.f64(), "longitude": r.f64(),
                         "horizontalAccuracyMeters": r.f64(), "speedMetersPerSecond": r.f64(),
                         "courseDegrees": r.opt_f64(), "reset": r.boolean()})


def waypoint(r):
    return {"coordinate": coordinate(r), "distanceAlongMeters": r.f64(), "outgoingBearingDegrees": r.f64(),
            "turnDegrees": r.f64(), "kind": r.enum(WAYPOINT_KIND), "instruction": r.string()}


def route(r):
    out = {"routeID": r.u32(), "timeSeconds": r.f64(), "provider": r.string(), "lengthMeters": r.f64()}
    out["points"] = [coordinate(r) for _ in range(r.u32())]
    out["waypoints"] = [waypoint(r) for _ in range(r.u32())]
    return out


def progress(r):
    return without_none({"timeSeconds": r.f64(), "routeID": r.u32(), "distanceAlongMeters": r.f64(),
                         "distanceRemainingMeters": r.f64(), "crossTrackMeters": r.f64(),
                         "nextWaypointIndex": r.u32(), "bearingToNextDegrees": r.f64(),
                         "distanceToNextMeters": r.f64(), "etaSeconds": r.opt_f64(), "state": r.enum(ROUTE_STATE)})


def target(r):
    return {"timeSeconds": r.f64(), "routeID": r.u32(), "coordinate": coordinate(r), "bearingDegrees": r.f64(),
            "distanceMeters": r.f64(), "kind": r.enum(TARGET_KIND)}


def cue(r):
    return {"timeSeconds": r.f64(), "kind": r.enum(CUE_KIND), "intensity": r.f64(), "deviationDegrees": r.f64()}


def calibration_state(r):
    return {"timeSeconds": r.f64(), "step": r.enum(CALIBRATION_STEP), "prompt": r.string(),
            "cueIntensity": r.f64(), "progress": r.f64()}


def calibration_result(r):
    return {"timeSeconds": r.f64(), "succeeded": r.boolean(), "offsetDegrees": r.f64(), "spreadDegrees": r.f64(),
            "sampleCount": r.u32(), "reason": r.string()}


def status(r):
    out = {"timeSeconds": r.f64(), "stage": r.string(), "health": r.enum(STAGE_HEALTH), "message": r.string()}
    out["counters"] = [{"name": r.string(), "value": r.u64()} for _ in range(r.u32())]
    return out


def control(r):
    return {"timeSeconds": r.f64(), "command": r.enum(CONTROL_COMMAND), "text": r.string(), "sender": r.string(),
            "requestID": r.string(), "sentSeconds": r.f64(), "stopped": r.boolean()}


def turn(r):
    return {"timeSeconds": r.f64(), "routeID": r.u32(), "manoeuvre": r.u32(), "phase": r.enum(TURN_PHASE),
            "turnDegrees": r.f64(), "junctionsBefore": r.u32(), "distanceMeters": r.f64(),
            "outgoingBearingDegrees": r.f64(), "street": r.string()}


def step(r):
    return {"timeSeconds": r.f64(), "count": r.u32(), "cadenceHz": r.f64()}


# type id -> (topic, decoder)
TYPES = {1: ("fix", fix), 2: ("heading", heading), 3: ("attitude", attitude), 4: ("smoothed", smoothed),
         5: ("route", route), 6: ("progress", progress), 7: ("target", target), 8: ("cue", cue),
         9: ("calstate", calibration_state), 10: ("calresult", calibration_result), 11: ("status", status),
         12: ("control", control), 13: ("turn", turn), 14: ("step", step)}


def decode(frames):
    """Returns (header, topic, payload dict), None for a heartbeat; raises on a bad message."""
    if len(frames) != 3:
        raise ValueError(f"{len(frames)} frames, expected 3")
    topic_bytes, header_bytes, payload_bytes = frames
    h = Reader(header_bytes)
    version = h.u8()
    if version != SCHEMA_VERSION:
        raise ValueError(f"schema version {version}")
    type_id = h.u8()
    h.u16()  # reserved
    header = {"schemaVersion": version, "typeID": type_id, "sequence": h.u64(), "sendTimeNanoseconds": h.i64()}
    header["stage"] = h.take(h.u8()).decode("utf-8")
    h.done()
    if topic_bytes == HEARTBEAT_TOPIC:
        return header, None, None
    if type_id not in TYPES:
        raise ValueError(f"unknown type id {type_id}")
    topic, decoder = TYPES[type_id]
    if topic_bytes.decode("utf-8", "replace") != topic:
        raise ValueError(f"type {topic} on topic {topic_bytes!r}")
    r = Reader(payload_bytes)
    payload = decoder(r)
    r.done()
    return header, topic, payload


def read_key(path):
    """The one Z85 key in a `hapticnav keys generate` file (NAME.key or NAME.pub), # comments aside."""
    with open(path, encoding="utf-8") as file:
        lines = [line.strip() for line in file if line.strip() and not line.lstrip().startswith("#")]
    if len(lines) != 1 or len(lines[0]) != 40:
        raise ValueError(f"{path}: expected one Z85 key of 40 characters")
    return lines[0].encode()


def subscribe(context, endpoints, topics=None, keys=None, key=None):
    """A SUB socket connected to every endpoint, for `topics` (and heartbeats) or everything, and a poller on it.

    An endpoint written ENDPOINT=NAME is an encrypted stage whose public key is NAME.pub in the folder `keys`: the
    connection is CURVE, as the reader `key` (KEY.key and KEY.pub there; one of the config's readers), and completes
    only with the publisher holding NAME's secret."""
    socket = context.socket(zmq.SUB)
    socket.setsockopt(zmq.LINGER, 0)
    for topic in ([*topics, HEARTBEAT_TOPIC.decode()] if topics else [""]):
        socket.setsockopt(zmq.SUBSCRIBE, topic.encode())
    # CURVE keys apply to the connections made after they are set: one socket per encryption setting.
    for endpoint in sorted(endpoints, key=lambda e: "=" in e):  # plain ones before the keys are set
        address, _, publisher = endpoint.partition("=")
        if publisher:
            if not keys or not key:
                raise ValueError(f"{endpoint}: an encrypted stage needs --keys DIR and --key NAME (a reader's key)")
            socket.curve_secretkey = read_key(os.path.join(keys, f"{key}.key"))
            socket.curve_publickey = read_key(os.path.join(keys, f"{key}.pub"))
            socket.curve_serverkey = read_key(os.path.join(keys, f"{publisher}.pub"))
        socket.connect(address)
    poller = zmq.Poller()
    poller.register(socket, zmq.POLLIN)
    return socket, poller


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--connect", action="append", required=True,
                        help="endpoint (repeatable); ENDPOINT=NAME for a stage encrypted with key NAME")
    parser.add_argument("--keys", help="the folder of key files (for encrypted stages)")
    parser.add_argument("--key", default="monitor", help="the reader's key pair in --keys (one of the readers)")
    parser.add_argument("--count", type=int, default=0, help="stop after this many messages (0: never)")
    parser.add_argument("--seconds", type=float, default=0, help="stop after this many seconds (0: never)")
    parser.add_argument("--json", action="store_true", help="print JSON Lines")
    args = parser.parse_args()

    context = zmq.Context()
    socket, poller = subscribe(context, args.connect, keys=args.keys, key=args.key)
    deadline = time.monotonic() + args.seconds if args.seconds else None
    printed = dropped = 0
    try:
        while not args.count or printed < args.count:
            if deadline and time.monotonic() > deadline:
                break
            if not poller.poll(100):
                continue
            frames = socket.recv_multipart()
            try:
                decoded = decode(frames)
            except (Truncated, ValueError, UnicodeDecodeError) as error:
                dropped += 1
                print(f"dropped a bad message: {error}", file=sys.stderr)
                continue
            header, topic, payload = decoded
            if topic is None:
                continue
            if args.json:
                print(json.dumps({"topic": topic, "stage": header["stage"], "sequence": header["sequence"],
                                  "sendTimeNanoseconds": header["sendTimeNanoseconds"], "payload": payload}),
                      flush=True)
            else:
                print(f'{header["stage"]} {topic} #{header["sequence"]} {payload}', flush=True)
            printed += 1
    except KeyboardInterrupt:
        pass
    finally:
        socket.close()
        context.term()
    if dropped:
        print(f"{dropped} bad message(s) dropped", file=sys.stderr)


if __name__ == "__main__":
    main()
