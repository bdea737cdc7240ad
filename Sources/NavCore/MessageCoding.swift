// The v1 payload layouts. Keep this file and docs/PROTOCOL.md in step.

extension LocationFix: WireCodable {
    public func encode(to writer: inout WireWriter) {
        writer.write(self.timeSeconds)
        writer.write(self.latitude)
        writer.write(self.longitude)
        writer.write(self.altitudeMeters)
        writer.write(self.horizontalAccuracyMeters)
        writer.write(self.speedMetersPerSecond)
        writer.write(self.courseDegrees)
    }

    public init(from reader: inout WireReader) throws(WireDecodingError) {
        // Not-finite values are legal here: the smoother, not the wire, decides what a bad fix is.
        self.timeSeconds = try reader.readDouble()
        self.latitude = try reader.readDouble()
        self.longitude = try reader.readDouble()
        self.altitudeMeters = try reader.readOptionalDouble("altitudeMeters")
        self.horizontalAccuracyMeters = try reader.readDouble()
        self.speedMetersPerSecond = try reader.readOptionalDouble("speedMetersPerSecond")
        self.courseDegrees = try reader.readOptionalDouble("courseDegrees")
    }
}

extension HeadingSample: WireCodable {
    public func encode(to writer: inout WireWriter) {
        writer.write(self.timeSeconds)
        writer.write(self.headingDegrees)
        writer.write(self.reference)
        writer.write(self.accuracyDegrees)
    }

    public init(from reader: inout WireReader) throws(WireDecodingError) {
        self.timeSeconds = try reader.readFinite("timeSeconds")
        self.headingDegrees = try reader.readFinite("headingDegrees")
        self.reference = try reader.readEnum(HeadingReference.self, "reference")
        self.accuracyDegrees = try reader.readOptionalFinite("accuracyDegrees")
    }
}

extension Attitude: WireCodable {
    public func encode(to writer: inout WireWriter) {
        writer.write(self.timeSeconds)
        writer.write(self.pitchDegrees)
        writer.write(self.rollDegrees)
    }

    public init(from reader: inout WireReader) throws(WireDecodingError) {
        self.timeSeconds = try reader.readFinite("timeSeconds")
        self.pitchDegrees = try reader.readFinite("pitchDegrees")
        self.rollDegrees = try reader.readFinite("rollDegrees")
    }
}

extension SmoothedFix: WireCodable {
    public func encode(to writer: inout WireWriter) {
        writer.write(self.timeSeconds)
        writer.write(self.latitude)
        writer.write(self.longitude)
        writer.write(self.horizontalAccuracyMeters)
        writer.write(self.speedMetersPerSecond)
        writer.write(self.courseDegrees)
        writer.write(self.reset)
    }

    public init(from reader: inout WireReader) throws(WireDecodingError) {
        self.timeSeconds = try reader.readFinite("timeSeconds")
        self.latitude = try reader.readFinite("latitude")
        self.longitude = try reader.readFinite("longitude")
        self.horizontalAccuracyMeters = try reader.readFinite("horizontalAccuracyMeters")
        self.speedMetersPerSecond = try reader.readFinite("speedMetersPerSecond")
        self.courseDegrees = try reader.readOptionalFinite("courseDegrees")
        self.reset = try reader.readBool("reset")
    }
}

extension Coordinate {
    func encode(to writer: inout WireWriter) {
        writer.write(self.latitude)
        writer.write(self.longitude)
    }

    init(from reader: inout WireReader) throws(WireDecodingError) {
        self.latitude = try reader.readFinite("latitude")
        self.longitude = try reader.readFinite("longitude")
    }
}

extension Waypoint {
    func encode(to writer: inout WireWriter) {
        self.coordinate.encode(to: &writer)
        writer.write(self.distanceAlongMeters)
        writer.write(self.outgoingBearingDegrees)
        writer.write(self.turnDegrees)
        writer.write(self.kind)
        writer.write(self.instruction)
    }

    init(from reader: inout WireReader) throws(WireDecodingError) {
        self.coordinate = try Coordinate(from: &reader)
        self.distanceAlongMeters = try reader.readFinite("distanceAlongMeters")
        self.outgoingBearingDegrees = try reader.readFinite("outgoingBearingDegrees")
        self.turnDegrees = try reader.readFinite("turnDegrees")
        self.kind = try reader.readEnum(WaypointKind.self, "kind")
        self.instruction = try reader.readString("instruction")
    }

    /// The smallest encoded size [bytes]: four binary64, the kind and an empty string.
    static let minimumWireSize = 16 + 24 + 1 + 2
}

extension Route: WireCodable {
    public func encode(to writer: inout WireWriter) {
        writer.write(self.routeID)
        writer.write(self.timeSeconds)
        writer.write(self.provider)
        writer.write(self.lengthMeters)
        writer.writeCount(self.points.count)
        for point in self.points { point.encode(to: &writer) }
        writer.writeCount(self.waypoints.count)
        for waypoint in self.waypoints { waypoint.encode(to: &writer) }
    }

    public init(from reader: inout WireReader) throws(WireDecodingError) {
        self.routeID = try reader.readUInt32()
        self.timeSeconds = try reader.readFinite("timeSeconds")
        self.provider = try reader.readString("provider")
        self.lengthMeters = try reader.readFinite("lengthMeters")
        let pointCount = try reader.readCount("points", minimumElementSize: 16)
        var points: [Coordinate] = []
        points.reserveCapacity(pointCount)
        for _ in 0..<pointCount { points.append(try Coordinate(from: &reader)) }
        self.points = points
        let waypointCount = try reader.readCount("waypoints", minimumElementSize: Waypoint.minimumWireSize)
        var waypoints: [Waypoint] = []
        waypoints.reserveCapacity(waypointCount)
        for _ in 0..<waypointCount { waypoints.append(try Waypoint(from: &reader)) }
        self.waypoints = waypoints
    }
}

extension RouteProgress: WireCodable {
    public func encode(to writer: inout WireWriter) {
        writer.write(self.timeSeconds)
        writer.write(self.routeID)
        writer.write(self.distanceAlongMeters)
        writer.write(self.distanceRemainingMeters)
        writer.write(self.crossTrackMeters)
        writer.write(self.nextWaypointIndex)
        writer.write(self.bearingToNextDegrees)
        writer.write(self.distanceToNextMeters)
        writer.write(self.etaSeconds)
        writer.write(self.state)
    }

    public init(from reader: inout WireReader) throws(WireDecodingError) {
        self.timeSeconds = try reader.readFinite("timeSeconds")
        self.routeID = try reader.readUInt32()
        self.distanceAlongMeters = try reader.readFinite("distanceAlongMeters")
        self.distanceRemainingMeters = try reader.readFinite("distanceRemainingMeters")
        self.crossTrackMeters = try reader.readFinite("crossTrackMeters")
        self.nextWaypointIndex = try reader.readUInt32()
        self.bearingToNextDegrees = try reader.readFinite("bearingToNextDegrees")
        self.distanceToNextMeters = try reader.readFinite("distanceToNextMeters")
        self.etaSeconds = try reader.readOptionalFinite("etaSeconds")
        self.state = try reader.readEnum(RouteState.self, "state")
    }
}

extension GuidanceTarget: WireCodable {
    public func encode(to writer: inout WireWriter) {
        writer.write(self.timeSeconds)
        writer.write(self.routeID)
        self.coordinate.encode(to: &writer)
        writer.write(self.bearingDegrees)
        writer.write(self.distanceMeters)
        writer.write(self.kind)
    }

    public init(from reader: inout WireReader) throws(WireDecodingError) {
        self.timeSeconds = try reader.readFinite("timeSeconds")
        self.routeID = try reader.readUInt32()
        self.coordinate = try Coordinate(from: &reader)
        self.bearingDegrees = try reader.readFinite("bearingDegrees")
        self.distanceMeters = try reader.readFinite("distanceMeters")
        self.kind = try reader.readEnum(TargetKind.self, "kind")
    }
}

extension HapticCue: WireCodable {
    public func encode(to writer: inout WireWriter) {
        writer.write(self.timeSeconds)
        writer.write(self.kind)
        writer.write(self.intensity)
        writer.write(self.deviationDegrees)
    }

    public init(from reader: inout WireReader) throws(WireDecodingError) {
        self.timeSeconds = try reader.readFinite("timeSeconds")
        self.kind = try reader.readEnum(CueKind.self, "kind")
        self.intensity = try reader.readFinite("intensity")
        self.deviationDegrees = try reader.readFinite("deviationDegrees")
        guard (0...1).contains(self.intensity) else {
            throw .invalidValue(field: "intensity", detail: "\(self.intensity) outside 0...1")
        }
    }
}

extension CalibrationState: WireCodable {
    public func encode(to writer: inout WireWriter) {
        writer.write(self.timeSeconds)
        writer.write(self.step)
        writer.write(self.prompt)
        writer.write(self.cueIntensity)
        writer.write(self.progress)
    }

    public init(from reader: inout WireReader) throws(WireDecodingError) {
        self.timeSeconds = try reader.readFinite("timeSeconds")
        self.step = try reader.readEnum(CalibrationStep.self, "step")
        self.prompt = try reader.readString("prompt")
        self.cueIntensity = try reader.readFinite("cueIntensity")
        self.progress = try reader.readFinite("progress")
    }
}

extension CalibrationResult: WireCodable {
    public func encode(to writer: inout WireWriter) {
        writer.write(self.timeSeconds)
        writer.write(self.succeeded)
        writer.write(self.offsetDegrees)
        writer.write(self.spreadDegrees)
        writer.write(self.sampleCount)
        writer.write(self.reason)
    }

    public init(from reader: inout WireReader) throws(WireDecodingError) {
        self.timeSeconds = try reader.readFinite("timeSeconds")
        self.succeeded = try reader.readBool("succeeded")
        self.offsetDegrees = try reader.readFinite("offsetDegrees")
        self.spreadDegrees = try reader.readFinite("spreadDegrees")
        self.sampleCount = try reader.readUInt32()
        self.reason = try reader.readString("reason")
    }
}

extension ControlEvent: WireCodable {
    public func encode(to writer: inout WireWriter) {
        writer.write(self.timeSeconds)
        writer.write(self.command)
        writer.write(self.text)
        writer.write(self.sender)
        writer.write(self.requestID)
        writer.write(self.sentSeconds)
        writer.write(self.stopped)
    }

    public init(from reader: inout WireReader) throws(WireDecodingError) {
        self.timeSeconds = try reader.readFinite("timeSeconds")
        self.command = try reader.readEnum(ControlCommand.self, "command")
        self.text = try reader.readString("text")
        self.sender = try reader.readString("sender")
        self.requestID = try reader.readString("requestID")
        self.sentSeconds = try reader.readFinite("sentSeconds")
        self.stopped = try reader.readBool("stopped")
    }
}

extension TurnEvent: WireCodable {
    public func encode(to writer: inout WireWriter) {
        writer.write(self.timeSeconds)
        writer.write(self.routeID)
        writer.write(self.manoeuvre)
        writer.write(self.phase)
        writer.write(self.turnDegrees)
        writer.write(self.junctionsBefore)
        writer.write(self.distanceMeters)
        writer.write(self.outgoingBearingDegrees)
        writer.write(self.street)
    }

    public init(from reader: inout WireReader) throws(WireDecodingError) {
        self.timeSeconds = try reader.readFinite("timeSeconds")
        self.routeID = try reader.readUInt32()
        self.manoeuvre = try reader.readUInt32()
        self.phase = try reader.readEnum(TurnPhase.self, "phase")
        self.turnDegrees = try reader.readFinite("turnDegrees")
        self.junctionsBefore = try reader.readUInt32()
        self.distanceMeters = try reader.readFinite("distanceMeters")
        self.outgoingBearingDegrees = try reader.readFinite("outgoingBearingDegrees")
        self.street = try reader.readString("street")
    }
}

extension StepCount: WireCodable {
    public func encode(to writer: inout WireWriter) {
        writer.write(self.timeSeconds)
        writer.write(self.count)
        writer.write(self.cadenceHz)
    }

    public init(from reader: inout WireReader) throws(WireDecodingError) {
        self.timeSeconds = try reader.readFinite("timeSeconds")
        self.count = try reader.readUInt32()
        self.cadenceHz = try reader.readFinite("cadenceHz")
        guard self.cadenceHz >= 0 else {
            throw .invalidValue(field: "cadenceHz", detail: "\(self.cadenceHz) is negative")
        }
    }
}

extension StageStatus: WireCodable {
    public func encode(to writer: inout WireWriter) {
        writer.write(self.timeSeconds)
        writer.write(self.stage)
        writer.write(self.health)
        writer.write(self.message)
        writer.writeCount(self.counters.count)
        for counter in self.counters {
            writer.write(counter.name)
            writer.write(counter.value)
        }
    }

    public init(from reader: inout WireReader) throws(WireDecodingError) {
        self.timeSeconds = try reader.readFinite("timeSeconds")
        self.stage = try reader.readString("stage")
        self.health = try reader.readEnum(StageHealth.self, "health")
        self.message = try reader.readString("message")
        let count = try reader.readCount("counters", minimumElementSize: 10)
        var counters: [StatusCounter] = []
        counters.reserveCapacity(count)
        for _ in 0..<count {
            let name = try reader.readString("counters.name")
            counters.append(StatusCounter(name: name, value: try reader.readUInt64()))
        }
        self.counters = counters
    }
}

extension WireReader {
    /// Reads an optional binary64 that may hold any value, NaN included, when present.
    public mutating func readOptionalDouble(_ field: String) throws(WireDecodingError) -> Double? {
        switch try self.readUInt8() {
        case 0: return nil
        case 1: return try self.readDouble()
        case let other: throw .invalidValue(field: field, detail: "presence byte \(other)")
        }
    }
}
