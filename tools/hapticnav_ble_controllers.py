#!/usr/bin/env python3
"""Virtual Bluetooth LE controllers on loopback, for trying and testing the BLE band without radio hardware.

Each slot is one virtual controller (Bumble's, in this process), reached by its host over HCI on a TCP port of its
own (Bumble's `tcp-client:127.0.0.1:PORT` transport); every slot's controller shares one in-process radio link, so
a host on one slot scans, connects to and exchanges GATT with a host on another as over the air. A host on a slot is a
device: when its host goes (the process ends or closes the connection), the slot's controller is switched off as a
device's radio would be: its connections end on the peer's side (reason 0x08, the supervision timeout a peer sees
when a device goes out of range or loses power) and its advertising stops. The next host on the slot gets a fresh
controller with the slot's own public address, like a band that reboots.

    hapticnav_ble_controllers.py --slots 2 [--host 127.0.0.1] [--port 0]

A line `cut SLOT SECONDS` on its standard input takes the radio of that slot's device away as going out of range
does: nothing passes over its connections for SECONDS (a band whose host went quiet has its watchdog to stop it),
and then each side sees its connection end with the supervision timeout (0x08); its host stays, and may connect again.

It prints one JSON line once listening: {"event": "ready", "slots": [{"port": P, "address": "F0:..."}, ...]},
and then one line per host that comes and goes. It runs until it is sent SIGTERM or SIGINT.
"""
import argparse
import asyncio
import json
import signal
import sys

from bumble import hci, ll
from bumble.controller import Controller
from bumble.link import LocalLink
from bumble.transport.common import StreamPacketSource

SUPERVISION_TIMEOUT = 0x08


def say(event: str, **fields) -> None:
    print(json.dumps({"event": event, **fields}), flush=True)


class Slot:
    """One virtual controller's place on the link: the TCP port its host reaches it on, its public address."""

    def __init__(self, index: int, link: LocalLink, address: str) -> None:
        self.index = index
        self.link = link
        self.address = address
        self.controller: Controller | None = None
        self.hosts = 0

    def protocol(self) -> asyncio.Protocol:
        slot = self

        class HostConnection(asyncio.Protocol):
            def connection_made(self, transport):
                if slot.controller is not None:
                    # One host per controller, as on a real device.
                    say("refused", slot=slot.index, reason="the slot has a host already")
                    transport.close()
                    self.controller = None
                    return
                slot.hosts += 1
                self.source = StreamPacketSource()
                self.sink = _Sink(transport)
                self.controller = Controller(
                    f"slot{slot.index}", host_source=self.source, host_sink=self.sink, link=slot.link,
                    public_address=hci.Address(slot.address, hci.Address.PUBLIC_DEVICE_ADDRESS))
                slot.controller = self.controller
                say("host", slot=slot.index, connected=True, hosts=slot.hosts)

            def data_received(self, data):
                if self.controller is not None:
                    self.source.data_received(data)

            def connection_lost(self, exc):
                if self.controller is None:
                    return
                slot.switch_off(self.controller)
                self.sink.transport = None
                self.controller = None
                say("host", slot=slot.index, connected=False)

        return HostConnection()

    async def cut(self, seconds: float) -> None:
        """Out of range: silence on every connection for `seconds`, then each side's supervision timeout."""
        controller = self.controller
        if controller is None:
            say("warning", slot=self.index, message="cut: the slot has no host")
            return
        self.link.silenced.add(controller)
        say("cut", slot=self.index, seconds=seconds)
        await asyncio.sleep(seconds)
        for connection in list(controller.le_connections.values()):
            peer = self.link.find_le_controller(connection.peer_address)
            if peer is not None:
                for other in list(peer.le_connections.values()):
                    if other.peer_address == connection.self_address:
                        peer.on_le_disconnected(other, SUPERVISION_TIMEOUT)
            controller.on_le_disconnected(connection, SUPERVISION_TIMEOUT)
        self.link.silenced.discard(controller)
        say("cut-over", slot=self.index)

    def switch_off(self, controller: Controller) -> None:
        """The device has gone: its peers see their connections time out, and it no longer advertises."""
        for connection in list(controller.le_connections.values()):
            try:
                connection.send_ll_control_pdu(ll.TerminateInd(SUPERVISION_TIMEOUT))
            except Exception as error:  # a peer that has gone as well
                say("warning", slot=self.index, message=f"terminating a connection: {error}")
        controller.le_connections.clear()
        try:
            controller.le_legacy_advertiser.stop()
        except Exception:
            pass
        for advertising_set in list(controller.advertising_sets.values()):
            try:
                advertising_set.stop()
            except Exception:
                pass
        controller.host = None
        if controller in self.link.controllers:
            self.link.remove_controller(controller)
        if self.controller is controller:
            self.controller = None


class _Sink:
    def __init__(self, transport):
        self.transport = transport

    def on_packet(self, packet: bytes) -> None:
        if self.transport is not None and not self.transport.is_closing():
            self.transport.write(packet)


class RadioLink(LocalLink):
    """Bumble's in-process link, with devices whose radio can be silenced (out of range)."""

    def __init__(self) -> None:
        super().__init__()
        self.silenced: set = set()

    def send_acl_data(self, sender_controller, destination_address, transport, data):
        destination = self.find_le_controller(destination_address)
        if sender_controller in self.silenced or destination in self.silenced:
            return
        super().send_acl_data(sender_controller, destination_address, transport, data)

    def send_ll_control_pdu(self, sender_address, receiver_address, packet):
        ends = (self.find_le_controller(sender_address), self.find_le_controller(receiver_address))
        if any(end in self.silenced for end in ends if end is not None):
            return
        super().send_ll_control_pdu(sender_address, receiver_address, packet)


async def commands(slots: list) -> None:
    """Reads `cut SLOT SECONDS` lines from standard input."""
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader()
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    while line := await reader.readline():
        words = line.decode(errors="replace").split()
        if len(words) == 3 and words[0] == "cut" and words[1].isdigit() and int(words[1]) < len(slots):
            try:
                seconds = float(words[2])
            except ValueError:
                seconds = -1
            if 0 <= seconds <= 60:
                asyncio.ensure_future(slots[int(words[1])].cut(seconds))
                continue
        if words:
            say("warning", message=f"not a command: {line.decode(errors='replace').strip()} (cut SLOT SECONDS)")


async def serve(arguments) -> None:
    link = RadioLink()
    loop = asyncio.get_running_loop()
    servers = []
    slots = []
    described = []
    for index in range(arguments.slots):
        slot = Slot(index, link, f"F0:00:00:00:00:{index + 1:02X}")
        server = await loop.create_server(slot.protocol, arguments.host, arguments.port if index == 0 else 0)
        servers.append(server)
        slots.append(slot)
        described.append({"port": server.sockets[0].getsockname()[1], "address": slot.address})
    if not sys.stdin.isatty():
        asyncio.ensure_future(commands(slots))
    say("ready", slots=described)
    stop = loop.create_future()
    for number in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(number, lambda: stop.done() or stop.set_result(None))
    await stop
    for server in servers:
        server.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--slots", type=int, default=2, help="how many controllers (devices), 2 to 8")
    parser.add_argument("--host", default="127.0.0.1", help="the address to listen on (loopback by default)")
    parser.add_argument("--port", type=int, default=0, help="the first slot's port (0: any free port)")
    arguments = parser.parse_args()
    if not 1 <= arguments.slots <= 8:
        parser.error("--slots: 1 to 8")
    asyncio.run(serve(arguments))
    return 0


if __name__ == "__main__":
    sys.exit(main())
