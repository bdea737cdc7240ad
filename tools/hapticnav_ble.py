#!/usr/bin/env python3
"""HapticNav's Bluetooth LE bridge: the band protocol's bytes over the Nordic UART Service, through Bumble.

The band protocol itself (docs/BAND-PROTOCOL.md) stays in HapticNav's Swift code; this bridge only carries its bytes
between a stream and a BLE link, one BLE connection per run. The Nordic UART Service (NUS):

    service 6E400001-B5A3-F393-E0A9-E50E24DCCA9E
    RX      6E400002-B5A3-F393-E0A9-E50E24DCCA9E  written by the central, without response (host -> band)
    TX      6E400003-B5A3-F393-E0A9-E50E24DCCA9E  notified by the peripheral (band -> host)

central (the `band` plugin starts it):
    hapticnav_ble.py central --transport T (--name NAME | --address AA:BB:CC:DD:EE:FF) [--scan-seconds S]
  Standard input is a stream socket: what is read from it is written to RX (in pieces of the link's MTU less 3),
  and every TX notification is written to it. It scans for the band by advertised name or address, connects,
  finds the service (a device that lacks it is refused and named), subscribes to TX, and says so on standard
  output as JSON lines ("scanning", "found", "connected" with the signal strength and MTU, "rssi" every few seconds,
  "disconnected"). It ends when the BLE link drops (exit 0: the plugin reconnects by starting it again), when its
  standard input ends (it disconnects first), or: 2 not found within --scan-seconds, 3 refused, 1 any other error.

peripheral (`hapticnav band-emulator --ble` starts it):
    hapticnav_ble.py peripheral --transport T --name NAME --connect HOST:PORT [--address A] [--without-service]
  Advertises NAME with the service; for each central that connects, opens a TCP connection to HOST:PORT (the band
  emulator) and carries RX writes to it and its bytes back as TX notifications; closes it when the central goes.
  --without-service: a look-alike that advertises the name but offers only a battery service (for testing refusal).

T is a Bumble HCI transport: usb:0 (a USB dongle), hci-socket:0 (the kernel's adapter hci0), serial:/dev/ttyACM0,
tcp-client:127.0.0.1:PORT (a virtual controller of tools/hapticnav_ble_controllers.py), ...
"""
import argparse
import asyncio
import hashlib
import json
import os
import random
import socket
import stat
import sys

NUS_SERVICE = "6E400001-B5A3-F393-E0A9-E50E24DCCA9E"
NUS_RX = "6E400002-B5A3-F393-E0A9-E50E24DCCA9E"
NUS_TX = "6E400003-B5A3-F393-E0A9-E50E24DCCA9E"
BATTERY_SERVICE = "180F"
BATTERY_LEVEL = "2A19"

EXIT_NOT_FOUND = 2
EXIT_REFUSED = 3


def say(event: str, **fields) -> None:
    print(json.dumps({"event": event, **fields}), flush=True)


def load_bumble():
    try:
        import bumble  # noqa: F401
        import logging

        # What the bridge finds says itself in its JSON lines; Bumble's own warnings (a controller without the RSSI
        # command, say) only when they are errors.
        logging.getLogger("bumble").setLevel(logging.ERROR)
    except ImportError:
        say("error", message="Bumble is not installed for this Python (scripts/setup installs it: pip install bumble)")
        sys.exit(1)


def random_static_address() -> str:
    octets = [random.randrange(256) for _ in range(6)]
    octets[0] |= 0xC0  # a static random address
    return ":".join(f"{octet:02X}" for octet in octets)


def address_from_name(name: str) -> str:
    """A stable static random address for an emulated band: the same name gives the same address on every start."""
    digest = hashlib.sha256(name.encode()).digest()
    octets = list(digest[:6])
    octets[0] |= 0xC0
    return ":".join(f"{octet:02X}" for octet in octets)


def plain_address(address) -> str:
    return str(address).split("/")[0].upper()


def advertised_name(data) -> str | None:
    from bumble.core import AdvertisingData

    for kind in (AdvertisingData.COMPLETE_LOCAL_NAME, AdvertisingData.SHORTENED_LOCAL_NAME):
        value = data.get(kind)
        if value is None:
            continue
        if isinstance(value, (bytes, bytearray)):
            return value.decode("utf-8", errors="replace")
        return str(value)
    return None


async def open_host(transport_name: str):
    from bumble.transport import open_transport

    try:
        return await open_transport(transport_name)
    except Exception as error:
        say("error", message=f"cannot open the HCI transport '{transport_name}': {error}")
        sys.exit(1)


async def central(arguments) -> int:
    from bumble import hci
    from bumble.device import Device, Peer

    stream = socket.socket(fileno=os.dup(0))
    stream.setblocking(False)
    reader, writer = await asyncio.open_connection(sock=stream)
    transport = await open_host(arguments.transport)
    device = Device.with_hci(
        "HapticNav", hci.Address(random_static_address(), hci.Address.RANDOM_DEVICE_ADDRESS), transport.source,
        transport.sink)
    await device.power_on()
    wanted_address = arguments.address.upper() if arguments.address else None
    target = "address " + wanted_address if wanted_address else f"name '{arguments.name}'"
    say("scanning", target=target, seconds=arguments.scan_seconds)
    found = asyncio.get_running_loop().create_future()
    seen: set[str] = set()

    def on_advertisement(advertisement) -> None:
        name = advertised_name(advertisement.data)
        address = plain_address(advertisement.address)
        if address not in seen:
            seen.add(address)
        matches = address == wanted_address if wanted_address else name == arguments.name
        if matches and not found.done():
            found.set_result((advertisement.address, name, advertisement.rssi))

    device.on("advertisement", on_advertisement)
    await device.start_scanning(filter_duplicates=False)
    try:
        address, name, advertised_rssi = await asyncio.wait_for(found, arguments.scan_seconds)
    except asyncio.TimeoutError:
        say("not-found", target=target, seconds=arguments.scan_seconds, devicesSeen=len(seen))
        return EXIT_NOT_FOUND
    await device.stop_scanning()
    say("found", address=plain_address(address), name=name, rssi=advertised_rssi)
    try:
        connection = await device.connect(address, timeout=arguments.connect_seconds)
    except Exception as error:
        say("error", message=f"cannot connect to {plain_address(address)}: {error}")
        return 1
    lost = asyncio.get_running_loop().create_future()
    connection.on("disconnection", lambda reason: lost.done() or lost.set_result(reason))
    peer = Peer(connection)
    try:
        mtu = await peer.request_mtu(247)
    except Exception:
        mtu = 23
    services = await peer.discover_service(NUS_SERVICE)
    rx = tx = None
    if services:
        characteristics = await services[0].discover_characteristics()
        for characteristic in characteristics:
            if str(characteristic.uuid).upper() == NUS_RX:
                rx = characteristic
            elif str(characteristic.uuid).upper() == NUS_TX:
                tx = characteristic
    if rx is None or tx is None:
        offered = [str(service.uuid) for service in await peer.discover_services()]
        lacking = "the Nordic UART Service" if not services else "the service's RX or TX characteristic"
        say("refused", address=plain_address(address), name=name,
            reason=f"{name or plain_address(address)} lacks {lacking} ({NUS_SERVICE}); it offers {offered}")
        await connection.disconnect()
        return EXIT_REFUSED

    def on_notification(value: bytes) -> None:
        writer.write(bytes(value))

    await peer.subscribe(tx, on_notification)
    link_rssi = await read_rssi(connection)
    battery = await read_battery(peer)
    say("connected", address=plain_address(address), name=name, rssi=link_rssi, advertisedRssi=advertised_rssi,
        mtu=mtu, battery=battery)
    piece = max(20, mtu - 3)

    async def host_to_band() -> str:
        while True:
            data = await reader.read(4096)
            if not data:
                return "the host closed its stream"
            for start in range(0, len(data), piece):
                await peer.write_value(rx, data[start:start + piece], with_response=False)

    async def report_rssi() -> None:
        while link_rssi is not None:
            await asyncio.sleep(arguments.rssi_seconds)
            rssi = await read_rssi(connection)
            if rssi is not None:
                say("rssi", rssi=rssi)

    pump = asyncio.ensure_future(host_to_band())
    reporter = asyncio.ensure_future(report_rssi())
    done, _ = await asyncio.wait({pump, lost}, return_when=asyncio.FIRST_COMPLETED)
    reporter.cancel()
    if lost in done:
        say("disconnected", address=plain_address(address), reason=hci.HCI_Constant.error_name(lost.result()))
        pump.cancel()
        writer.close()
        return 0
    say("disconnected", address=plain_address(address), reason=pump.result())
    try:
        await asyncio.wait_for(connection.disconnect(), 2)
    except Exception:
        pass
    return 0


async def read_battery(peer) -> int | None:
    """The level of the standard Battery Service, where the band has one (many do, beside their UART) [%]."""
    try:
        services = await peer.discover_service(BATTERY_SERVICE)
        if not services:
            return None
        for characteristic in await services[0].discover_characteristics():
            if str(characteristic.uuid).upper().startswith("2A19") or "2A19" in str(characteristic.uuid).upper():
                value = await asyncio.wait_for(characteristic.read_value(), 2)
                return int(value[0]) if value else None
    except Exception:
        return None
    return None


async def read_rssi(connection) -> int | None:
    """The link's signal strength, where the controller reports it (dBm)."""
    try:
        rssi = await asyncio.wait_for(connection.get_rssi(), 1)
    except Exception:
        return None
    return rssi if isinstance(rssi, int) and rssi != 127 else None


async def peripheral(arguments) -> int:
    from bumble import hci
    from bumble.core import UUID, AdvertisingData
    from bumble.device import Device
    from bumble.gatt import Characteristic, CharacteristicValue, Service

    host, port = arguments.connect.rsplit(":", 1)
    transport = await open_host(arguments.transport)
    address = arguments.address or address_from_name(arguments.name)
    kind = hci.Address.RANDOM_DEVICE_ADDRESS if int(address[:2], 16) & 0xC0 == 0xC0 else \
        hci.Address.PUBLIC_DEVICE_ADDRESS
    device = Device.with_hci(arguments.name, hci.Address(address, kind), transport.source, transport.sink)
    sessions: dict = {}
    loop = asyncio.get_running_loop()

    def on_rx(connection, value: bytes) -> None:
        session = sessions.get(connection.handle)
        if session is not None:
            session[1].write(bytes(value))

    rx = Characteristic(
        NUS_RX, Characteristic.Properties.WRITE_WITHOUT_RESPONSE | Characteristic.Properties.WRITE,
        Characteristic.WRITEABLE, CharacteristicValue(write=on_rx))
    tx = Characteristic(NUS_TX, Characteristic.Properties.NOTIFY, Characteristic.READABLE, b"")
    if arguments.without_service:
        device.add_service(Service(BATTERY_SERVICE, [
            Characteristic(BATTERY_LEVEL, Characteristic.Properties.READ, Characteristic.READABLE, bytes([90]))]))
    else:
        device.add_service(Service(NUS_SERVICE, [rx, tx]))
    await device.power_on()

    async def carry(connection) -> None:
        try:
            reader, writer = await asyncio.open_connection(host, int(port))
        except OSError as error:
            say("error", message=f"cannot reach the band emulator at {arguments.connect}: {error}")
            await connection.disconnect()
            return
        sessions[connection.handle] = (reader, writer)
        while True:
            data = await reader.read(4096)
            if not data:
                break
            piece = max(20, connection.att_mtu - 3)
            for start in range(0, len(data), piece):
                await device.notify_subscribers(tx, data[start:start + piece])
        if connection.handle in sessions:
            await connection.disconnect()

    tasks: dict = {}

    def on_subscription(bearer, notify_enabled, _indicate_enabled) -> None:
        # The band's session (the emulator's connection) starts once the host listens to TX, so that nothing the band
        # says first (its battery) is notified to nobody.
        connection = getattr(bearer, "connection", bearer)
        if notify_enabled and connection.handle not in tasks:
            tasks[connection.handle] = asyncio.ensure_future(carry(connection))

    tx.on(Characteristic.EVENT_SUBSCRIPTION, on_subscription)

    def on_connection(connection) -> None:
        say("connected", address=plain_address(connection.peer_address))

        def on_disconnection(reason) -> None:
            session = sessions.pop(connection.handle, None)
            if session is not None:
                session[1].close()
            task = tasks.pop(connection.handle, None)
            if task is not None:
                task.cancel()
            say("disconnected", address=plain_address(connection.peer_address),
                reason=hci.HCI_Constant.error_name(reason))

        connection.on("disconnection", on_disconnection)

    device.on("connection", on_connection)
    advertising = bytes(AdvertisingData([
        (AdvertisingData.FLAGS, bytes([0x06])),
        (AdvertisingData.COMPLETE_LOCAL_NAME, arguments.name.encode()),
    ]))
    service = BATTERY_SERVICE if arguments.without_service else NUS_SERVICE
    response = bytes(AdvertisingData([
        (AdvertisingData.COMPLETE_LIST_OF_128_BIT_SERVICE_CLASS_UUIDS if len(service) > 4 else
         AdvertisingData.COMPLETE_LIST_OF_16_BIT_SERVICE_CLASS_UUIDS, UUID(service).to_bytes()),
    ]))
    # Every 50 ms, as bands advertise while they wait for their host: found and connected within a few intervals.
    await device.start_advertising(
        auto_restart=True, advertising_data=advertising, scan_response_data=response, advertising_interval_min=50,
        advertising_interval_max=50)
    say("advertising", name=arguments.name, address=address, service=not arguments.without_service)
    if not stat.S_ISFIFO(os.fstat(0).st_mode):
        await loop.create_future()
        return 0
    # Standard input is its starter's pipe: when the starter ends, so does the band it advertised.
    reader = asyncio.StreamReader()
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    while await reader.read(4096):
        pass
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    roles = parser.add_subparsers(dest="role", required=True)
    central_parser = roles.add_parser("central", help="reach a band (the band plugin's side)")
    central_parser.add_argument("--transport", required=True, help="Bumble HCI transport")
    which = central_parser.add_mutually_exclusive_group(required=True)
    which.add_argument("--name", help="the band's advertised name")
    which.add_argument("--address", help="the band's address, AA:BB:CC:DD:EE:FF")
    central_parser.add_argument("--scan-seconds", type=float, default=10)
    central_parser.add_argument("--connect-seconds", type=float, default=5)
    central_parser.add_argument("--rssi-seconds", type=float, default=5)
    peripheral_parser = roles.add_parser("peripheral", help="be a band (the band emulator's side)")
    peripheral_parser.add_argument("--transport", required=True, help="Bumble HCI transport")
    peripheral_parser.add_argument("--name", required=True, help="the name to advertise")
    peripheral_parser.add_argument("--connect", required=True, help="HOST:PORT of the band emulator")
    peripheral_parser.add_argument("--address", help="the address to use (default: one derived from the name)")
    peripheral_parser.add_argument("--without-service", action="store_true",
                                   help="advertise the name without the Nordic UART Service (a look-alike)")
    arguments = parser.parse_args()
    load_bumble()
    role = central if arguments.role == "central" else peripheral
    try:
        return asyncio.run(role(arguments))
    except KeyboardInterrupt:
        return 0


if __name__ == "__main__":
    sys.exit(main())
