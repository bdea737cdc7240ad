#!/usr/bin/env python3
"""Bridge a HapticNav bus to Lab Streaming Layer: cues, guidance targets, fixes and smoothed positions as LSL streams.

    python3 tools/hapticnav_lsl.py --connect ipc:///tmp/hapticnav-demo/haptic.sock \\
        --connect ipc:///tmp/hapticnav-demo/route.sock --connect ipc:///tmp/hapticnav-demo/smoother.sock

Each message becomes one sample, time-stamped with the message's own time (its measurement time, seconds since
1970 on the sender's clock) carried into LSL's clock, so that LabRecorder lines the walk up with eye tracking, EEG or
video recorded beside it. The first channel of every stream keeps that time as it was sent (Unix seconds).

Streams (all irregular rate, float64, one sample per message; the channel labels and units are in each stream's
description):
    HapticNav cues      (type HapticCue)       timeUnix, kind, intensity, deviationDegrees
                        kind: 0 silent, 1 turnLeft, 2 turnRight, 3 turnAround, 4 arrival, 5 signalLost, 6 calibration
    HapticNav targets   (type GuidanceTarget)  timeUnix, routeID, latitude, longitude, bearingDegrees, distanceMeters, kind
    HapticNav fixes     (type Position)        timeUnix, latitude, longitude, horizontalAccuracyMeters
    HapticNav smoothed  (type Position)        timeUnix, latitude, longitude, horizontalAccuracyMeters, speedMetersPerSecond

Needs pyzmq and pylsl (`pip install pyzmq pylsl`; pylsl's wheel bundles liblsl). Decodes with hapticnav_listen.py,
the Python client of docs/PROTOCOL.md beside it; bad messages are counted and dropped.
"""
import argparse
import os
import sys
import time

import pylsl
import zmq

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hapticnav_listen import CUE_KIND, TARGET_KIND, Truncated, decode, subscribe  # noqa: E402

STREAMS = {
    "cue": ("HapticNav cues", "HapticCue",
            [("timeUnix", "s"), ("kind", "enum"), ("intensity", "0..1"), ("deviationDegrees", "deg")]),
    "target": ("HapticNav targets", "GuidanceTarget",
               [("timeUnix", "s"), ("routeID", "id"), ("latitude", "deg"), ("longitude", "deg"),
                ("bearingDegrees", "deg"), ("distanceMeters", "m"), ("kind", "enum")]),
    "fix": ("HapticNav fixes", "Position",
            [("timeUnix", "s"), ("latitude", "deg"), ("longitude", "deg"), ("horizontalAccuracyMeters", "m")]),
    "smoothed": ("HapticNav smoothed", "Position",
                 [("timeUnix", "s"), ("latitude", "deg"), ("longitude", "deg"), ("horizontalAccuracyMeters", "m"),
                  ("speedMetersPerSecond", "m/s")]),
}


def sample(topic, payload):
    """The stream's channels for one decoded message."""
    if topic == "cue":
        return [payload["timeSeconds"], CUE_KIND.index(payload["kind"]), payload["intensity"],
                payload["deviationDegrees"]]
    if topic == "target":
        c = payload["coordinate"]
        return [payload["timeSeconds"], payload["routeID"], c["latitude"], c["longitude"], payload["bearingDegrees"],
                payload["distanceMeters"], TARGET_KIND.index(payload["kind"])]
    if topic == "fix":
        return [payload["timeSeconds"], payload["latitude"], payload["longitude"], payload["horizontalAccuracyMeters"]]
    return [payload["timeSeconds"], payload["latitude"], payload["longitude"], payload["horizontalAccuracyMeters"],
            payload["speedMetersPerSecond"]]


def outlet(topic, source_id):
    name, kind, channels = STREAMS[topic]
    info = pylsl.StreamInfo(name, kind, len(channels), pylsl.IRREGULAR_RATE, pylsl.cf_double64,
                            f"{source_id}-{topic}")
    described = info.desc().append_child("channels")
    for label, unit in channels:
        channel = described.append_child("channel")
        channel.append_child_value("label", label)
        channel.append_child_value("unit", unit)
    info.desc().append_child_value("manufacturer", "HapticNav")
    return pylsl.StreamOutlet(info)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--connect", action="append", required=True, help="a stage's endpoint (repeatable)")
    parser.add_argument("--source-id", default="hapticnav", help="prefix of the streams' LSL source ids")
    parser.add_argument("--seconds", type=float, default=0, help="stop after this many seconds (0: at SIGINT)")
    args = parser.parse_args()

    outlets = {topic: outlet(topic, args.source_id) for topic in STREAMS}
    context = zmq.Context()
    socket, poller = subscribe(context, args.connect, list(STREAMS))
    deadline = time.monotonic() + args.seconds if args.seconds else None
    print(f"bridging {', '.join(args.connect)} to LSL streams: "
          + ", ".join(name for name, _, _ in STREAMS.values()), file=sys.stderr, flush=True)
    pushed = dropped = 0
    try:
        while not deadline or time.monotonic() < deadline:
            if not poller.poll(100):
                continue
            frames = socket.recv_multipart()
            try:
                header, topic, payload = decode(frames)
            except (Truncated, ValueError, UnicodeDecodeError) as error:
                dropped += 1
                if dropped == 1 or dropped % 1000 == 0:
                    print(f"dropped {dropped} bad message(s); the last: {error}", file=sys.stderr, flush=True)
                continue
            if topic not in outlets:
                continue
            values = sample(topic, payload)
            # The message's own time, carried from the Unix clock into LSL's (same machine: the offset between the two
            # clocks now).
            stamp = values[0] + (pylsl.local_clock() - time.time())
            outlets[topic].push_sample(values, stamp)
            pushed += 1
    except KeyboardInterrupt:
        pass
    finally:
        socket.close()
        context.term()
    print(f"pushed {pushed} sample(s), dropped {dropped} bad message(s)", file=sys.stderr)


if __name__ == "__main__":
    main()
