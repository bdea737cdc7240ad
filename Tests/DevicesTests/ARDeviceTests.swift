import Devices
import Foundation
import Logging
import NavCore
import TestSupport
import Testing
import MapLogic

@Suite struct ARDeviceTests {
    @Test func theNextWaypointsArePlacedEastNorthAndUpOfTheWalker() async throws {
        let start = Coordinate(latitude: 43.7300, longitude: 7.4200)
        let corner = Geodesic.wgs84.direct(from: start, azimuthDegrees: 90, distanceMeters: 100).coordinate
        let end = Geodesic.wgs84.direct(from: corner, azimuthDegrees: 0, distanceMeters: 60).coordinate
        let route = RouteBuilder.route(
            from: RoutePlan(points: [start, corner, end]), routeID: 1, timeSeconds: 0, provider: "test")
        let folder = try scratchFolder()
        // A UDP listener, as an AR client would be.
        let port = freeTCPPort()
        let listener = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
        defer { close(listener) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(port).bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        _ = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(listener, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        var timeout = timeval(tv_sec: 2, tv_usec: 0)
        setsockopt(listener, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))

        let device = try ARDevice(
            udp: "127.0.0.1:\(port)", file: "\(folder)/ar.jsonl", waypoints: 2, logger: Logger(label: "test"))
        await device.observe(.route(route))
        await device.render(HapticCue(timeSeconds: 0, kind: .turnLeft, intensity: 0.5, deviationDegrees: -30))
        // The walker 40 m along the first leg.
        let walker = Geodesic.wgs84.direct(from: start, azimuthDegrees: 90, distanceMeters: 40).coordinate
        await device.observe(
            .smoothed(
                SmoothedFix(
                    timeSeconds: 5, latitude: walker.latitude, longitude: walker.longitude,
                    horizontalAccuracyMeters: 3, speedMetersPerSecond: 1.4, courseDegrees: 90, reset: false)))
        var buffer = [UInt8](repeating: 0, count: 65_536)
        let received = recv(listener, &buffer, buffer.count, 0)
        #expect(received > 0, "a datagram reached the AR client")
        let object = try #require(
            JSONSerialization.jsonObject(with: Data(buffer[0..<max(0, received)])) as? [String: Any])
        #expect(object["cue"] as? String == "turnLeft")
        let waypoints = try #require(object["waypoints"] as? [[String: Any]])
        #expect(waypoints.count == 2)
        // The corner is 60 m east; the destination 60 m east and 60 m north; both a little below (the Earth curves).
        let cornerPlacement = waypoints[0], endPlacement = waypoints[1]
        #expect(abs((cornerPlacement["east"] as? Double ?? 0) - 60) < 0.05)
        #expect(abs(cornerPlacement["north"] as? Double ?? 1) < 0.05)
        #expect((cornerPlacement["up"] as? Double ?? 1) <= 0)
        #expect(
            abs((endPlacement["east"] as? Double ?? 0) - 60) < 0.1
                && abs((endPlacement["north"] as? Double ?? 0) - 60) < 0.1)
        #expect(endPlacement["kind"] as? String == "arrival")
        let lines = try String(contentsOfFile: "\(folder)/ar.jsonl", encoding: .utf8).split(separator: "\n")
        #expect(lines.count == 1)
    }
}
