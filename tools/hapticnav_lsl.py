#!/usr/bin/env python3
"""Bridge a HapticNav bus to Lab Streaming Layer: cues, targets, headings, positions and a marker stream.

    python3 tools/hapticnav_lsl.py --connect ipc:///tmp/hapticnav-demo/haptic.sock \\
        --connect ipc:///tmp/hapticnav-demo/route.sock --connect ipc:///tmp/hapticnav-demo/smoother.sock \\
        --connect ipc:///tmp/hapticnav-demo/source.sock

    # an encrypted lab (docs/LAB.md): each encrypted stage as ENDPOINT=ITS_KEY_NAME, read with a reader's key
    python3 tools/hapticnav_lsl.py --keys keys --key monitor \\
        --connect tcp://192.168.1.20:5601=group1 --connect tcp://192.168.1.20:5603=group1 \\
        --connect tcp://192.168.1.30:5604=group2

Each message becomes one sample, time-stamped in LSL's clock at the moment the message's own time stands for (its
measurement time), so that LabRecorder lines the walk up with eye tracking, EEG or video recorded beside it. The
hosts' wall clocks need not agree: for each sending stage the bridge measures the offset between its clock and the
bridge's from the send times in every message and heartbeat header (the smallest receive-minus-send time of the
last 30 s: the clock offset plus the network's shortest delay, a millisecond or less on a lab network) and carries
each time through the offset of the clock it was read on: measurement times (fixes, headings, and the smoothed
fixes, targets, progress, routes and cues dated with them) through the source's, which is the stage the fixes and
headings come from (connect to it too); the experimenter's commands through the sink's. The first channel of every numeric stream keeps the time as sent (Unix seconds on
the sender's clock). docs/LAB.md, "Clocks", says how to keep the clocks in step anyway.

Streams (irregular rate; the channel labels and units are in each stream's description):
    HapticNav cues      (HapticCue)       timeUnix, kind, intensity, deviationDegrees
                        kind: 0 silent, 1 turnLeft, 2 turnRight, 3 turnAround, 4 arrival, 5 signalLost, 6 calibration
    HapticNav targets   (GuidanceTarget)  timeUnix, routeID, latitude, longitude, bearingDegrees, distanceMeters, kind
    HapticNav headings  (Heading)         timeUnix, headingDegrees, reference (0 true, 1 magnetic), accuracyDegrees
                        (NaN when not given)
    HapticNav fixes     (Position)        timeUnix, latitude, longitude, horizontalAccuracyMeters
    HapticNav smoothed  (Position)        timeUnix, latitude, longitude, horizontalAccuracyMeters, speedMetersPerSecond
    HapticNav markers   (Markers, string) one channel: "stop by NAME", "resume by NAME", "mark: TEXT",
                        "reroute to route N by PROVIDER", "arrived on route N", and each turn event once as
                        "turn: " and its words ("turn: Second left onto Rue Grimaldi, in 85 metres", "turn: Turn
                        left now", "turn: Straight on"), at the time of the fix it is for

Needs pyzmq and pylsl (`pip install pyzmq pylsl`; pylsl's wheel bundles liblsl). Decodes with hapticnav_listen.py,
the Python client of docs/PROTOCOL.md beside it; bad messages are counted and dropped.
"""
import argparse
import collections
import math
import os
import sys
import time

import pylsl
import zmq

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hapticnav_listen import (CUE_KIND, HEADING_REFERENCE, TARGET_KIND, Truncated, decode,  # noqa: E402
                              subscribe)

STREAMS = {
    "cue": ("HapticNav cues", "HapticCue",
            [("timeUnix", "s"), ("kind", "enum"), ("intensity", "0..1"), ("deviationDegrees", "deg")]),
    "target": ("HapticNav targets", "GuidanceTarget",
               [("timeUnix", "s"), ("routeID", "id"), ("latitude", "deg"), ("longitude", "deg"),
                ("bearingDegrees", "deg"), ("distanceMeters", "m"), ("kind", "enum")]),
    "heading": ("HapticNav headings", "Heading",
                [("timeUnix", "s"), ("headingDegrees", "deg"), ("reference", "enum"), ("accuracyDegrees", "deg")]),
    "fix": ("HapticNav fixes", "Position",
            [("timeUnix", "s"), ("latitude", "deg"), ("longitude", "deg"), ("horizontalAccuracyMeters", "m")]),
    "smoothed": ("HapticNav smoothed", "Position",
                 [("timeUnix", "s"), ("latitude", "deg"), ("longitude", "deg"), ("horizontalAccuracyMeters", "m"),
                  ("speedMetersPerSecond", "m/s")]),
}
MARKERS = ("HapticNav markers", "Markers")
# Topics the markers come from, besides the numeric streams'.
MARKER_TOPICS = ["control", "route", "progress", "turn"]
# Topics whose times are measurement times, on the clock of the stage that publishes fixes and headings.
MEASURED = {"fix", "heading", "smoothed", "target", "progress", "route", "cue", "turn"}
# Turn events remembered, so that each is marked once: the route stage repeats each, the sink republishes those it
# rendered, and both copies are equal in every field (docs/PROTOCOL.md, TurnEvent).
TURNS_REMEMBERED = 64


def sample(topic, payload):
    """The stream's channels for one decoded message."""
    if topic == "cue":
        return [payload["timeSeconds"], CUE_KIND.index(payload["kind"]), payload["intensity"],
                payload["deviationDegrees"]]
    if topic == "target":
        c = payload["coordinate"]
        return [payload["timeSeconds"], payload["routeID"], c["latitude"], c["longitude"], payload["bearingDegrees"],
                payload["distanceMeters"], TARGET_KIND.index(payload["kind"])]
    if topic == "heading":
        accuracy = payload.get("accuracyDegrees")
        return [payload["timeSeconds"], payload["headingDegrees"], HEADING_REFERENCE.index(payload["reference"]),
                math.nan if accuracy is None else accuracy]
    if topic == "fix":
        return [payload["timeSeconds"], payload["latitude"], payload["longitude"], payload["horizontalAccuracyMeters"]]
    return [payload["timeSeconds"], payload["latitude"], payload["longitude"], payload["horizontalAccuracyMeters"],
            payload["speedMetersPerSecond"]]


def turn_direction(turn_degrees):
    """The side and sharpness of a turn: "left", "bear right", "sharp left", "back left" (from 170 degrees); "straight"
    within 20 degrees."""
    side = "right" if turn_degrees > 0 else "left"
    size = abs(turn_degrees)
    if size < 20:
        return "straight"
    if size < 45:
        return f"bear {side}"
    if size < 135:
        return side
    if size < 170:
        return f"sharp {side}"
    return f"back {side}"


def turn_ordinal(junctions_before):
    """The ordinal of the junction that is junctions_before + 1 ahead: "next", "second", ..."""
    words = ["next", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth", "ninth", "tenth"]
    return words[junctions_before] if junctions_before < len(words) else f"{junctions_before + 1}th"


def spoken_meters(meters):
    """A distance as it is spoken: to the nearest 5 metres (halves away from zero), at least 5."""
    if not math.isfinite(meters):
        return 5
    return max(5, int(math.floor(min(meters, 100_000) / 5 + 0.5)) * 5)


def turn_words(event):
    """A decoded TurnEvent in words, as the speaker says them (Sources/NavCore/TurnWords.swift, which
    LabStreamingLayerTests holds this against)."""
    direction = turn_direction(event["turnDegrees"])
    street = event["street"]
    onto = f" onto {street}" if street else ""
    if event["phase"] == "announce":
        ordinal = turn_ordinal(event["junctionsBefore"])
        if direction in ("left", "right"):
            what = f"{ordinal} {direction}"
        else:
            said = "straight on" if direction == "straight" else f"turn {direction}" if direction.startswith("back") \
                else direction
            what = f"{ordinal} junction, {said}"
        return what[:1].upper() + what[1:] + onto + f", in {spoken_meters(event['distanceMeters'])} metres"
    if event["phase"] == "now":
        if direction == "straight":
            return "Straight on now" + onto
        if direction in ("left", "right", "back left", "back right"):
            return f"Turn {direction} now" + onto
        return direction[:1].upper() + direction[1:] + " now" + onto
    return "Straight on" + (f" along {street}" if street else "")


class Markers:
    """Turns control, route, progress and turn messages into marker strings: every stop, resume and mark; a reroute (a
    route whose id differs from the one before it); the first arrival on each route; each turn event once."""

    def __init__(self):
        self.route = None
        self.arrived = set()
        self.turns = collections.deque(maxlen=TURNS_REMEMBERED)

    def text(self, topic, payload):
        if topic == "control":
            if payload["command"] == "mark":
                return f'mark: {payload["text"]}'
            why = f': {payload["text"]}' if payload.get("text") else ""
            return f'{payload["command"]} by {payload["sender"]}{why}'
        if topic == "route":
            previous, self.route = self.route, payload["routeID"]
            if previous is not None and payload["routeID"] != previous:
                return f'reroute to route {payload["routeID"]} by {payload["provider"]}'
            return None
        if topic == "progress" and payload["state"] == "arrived" and payload["routeID"] not in self.arrived:
            self.arrived.add(payload["routeID"])
            return f'arrived on route {payload["routeID"]}'
        if topic == "turn":
            key = tuple(sorted(payload.items()))
            if key in self.turns:
                return None
            self.turns.append(key)
            return f"turn: {turn_words(payload)}"
        return None


class ClockOffsets:
    """For each sending stage, its wall clock's offset from this host's: the smallest (receive − send) time of the
    messages and heartbeats of the last `window` seconds (the offset plus the shortest network delay)."""

    def __init__(self, window=30.0):
        self.window = window
        self.samples = collections.defaultdict(collections.deque)

    def observe(self, stage, send_seconds, receive_seconds):
        samples = self.samples[stage]
        samples.append((receive_seconds, receive_seconds - send_seconds))
        while samples and samples[0][0] < receive_seconds - self.window:
            samples.popleft()

    def offset(self, stage):
        """This host's clock minus the stage's [s]; 0 before anything was heard from it."""
        samples = self.samples.get(stage)
        return min(difference for _, difference in samples) if samples else 0.0


def outlet(name, kind, channels, source_id, channel_format=pylsl.cf_double64):
    info = pylsl.StreamInfo(name, kind, len(channels), pylsl.IRREGULAR_RATE, channel_format, source_id)
    described = info.desc().append_child("channels")
    for label, unit in channels:
        channel = described.append_child("channel")
        channel.append_child_value("label", label)
        channel.append_child_value("unit", unit)
    info.desc().append_child_value("manufacturer", "HapticNav")
    info.desc().append_child_value("clock", "each sender's time carried into the bridge's clock by its measured offset")
    return pylsl.StreamOutlet(info)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--connect", action="append", required=True,
                        help="a stage's endpoint (repeatable); ENDPOINT=NAME for a stage encrypted with key NAME")
    parser.add_argument("--keys", help="the folder of key files (for encrypted stages)")
    parser.add_argument("--key", default="monitor", help="the reader's key pair in --keys (one of the readers)")
    parser.add_argument("--source-id", default="hapticnav", help="prefix of the streams' LSL source ids")
    parser.add_argument("--seconds", type=float, default=0, help="stop after this many seconds (0: at SIGINT)")
    args = parser.parse_args()

    outlets = {topic: outlet(name, kind, channels, f"{args.source_id}-{topic}")
               for topic, (name, kind, channels) in STREAMS.items()}
    marker_outlet = outlet(*MARKERS, [("event", "text")], f"{args.source_id}-markers", pylsl.cf_string)
    markers = Markers()
    offsets = ClockOffsets()
    context = zmq.Context()
    socket, poller = subscribe(context, args.connect, list(STREAMS) + MARKER_TOPICS, keys=args.keys, key=args.key)
    deadline = time.monotonic() + args.seconds if args.seconds else None
    print(f"bridging {', '.join(args.connect)} to LSL streams: "
          + ", ".join([name for name, _, _ in STREAMS.values()] + [MARKERS[0]]), file=sys.stderr, flush=True)
    pushed = dropped = 0
    source = None  # the stage fixes and headings come from: measurement times are on its clock
    try:
        while not deadline or time.monotonic() < deadline:
            if not poller.poll(100):
                continue
            frames = socket.recv_multipart()
            received = time.time()
            try:
                header, topic, payload = decode(frames)
            except (Truncated, ValueError, UnicodeDecodeError) as error:
                dropped += 1
                if dropped == 1 or dropped % 1000 == 0:
                    print(f"dropped {dropped} bad message(s); the last: {error}", file=sys.stderr, flush=True)
                continue
            offsets.observe(header["stage"], header["sendTimeNanoseconds"] / 1e9, received)
            if topic is None:
                continue
            if topic in ("fix", "heading"):
                source = header["stage"]
            if not math.isfinite(payload.get("timeSeconds", math.nan)):
                dropped += 1
                continue
            # The message's own time, on the clock it was read on, carried into this host's wall clock and then
            # into LSL's (this host's offset between the two now).
            clock = source if topic in MEASURED and source is not None else header["stage"]
            to_lsl = offsets.offset(clock) + (pylsl.local_clock() - time.time())
            if topic in outlets:
                values = sample(topic, payload)
                outlets[topic].push_sample(values, values[0] + to_lsl)
                pushed += 1
            text = markers.text(topic, payload)
            if text is not None:
                marker_outlet.push_sample([text], payload["timeSeconds"] + to_lsl)
                pushed += 1
    except KeyboardInterrupt:
        pass
    finally:
        socket.close()
        context.term()
    print(f"pushed {pushed} sample(s), dropped {dropped} bad message(s)", file=sys.stderr)


if __name__ == "__main__":
    main()
