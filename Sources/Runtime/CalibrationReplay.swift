public import HapticLogic
public import LocationSources
public import NavCore

/// `hapticnav calibrate --replay LOG`: the three-step calibration run on a recorded phone log instead of a live
/// bus: its headings and tilts, and whether the person walked (the log's speeds, or, for a phyphox recording
/// without them, the steps in its accelerometer). Prints the steps and prompts as the run passes them, on the log's
/// clock.
public enum CalibrationReplay {
    /// How a replayed run went.
    public struct Outcome: Sendable {
        /// The result, or nil when the log ended first.
        public var result: CalibrationResult?
        /// The step the run was in at the end.
        public var step: CalibrationStep
        /// Headings read [count].
        public var headings: Int
        /// Where walking came from: "speeds in the log", "N steps in the accelerometer", or "none".
        public var walkingFrom: String
        /// The heading nearest the reference direction that the log reached [degrees], for a run that never found it.
        public var nearestToReferenceDegrees: Double?
    }

    /// Runs the calibration over the log at `path`. `facingDegrees` is the direction the person faced in the first
    /// step, when it was not north (a recording made along a corridor): the window of the first step is centred on
    /// it, and the offset found is relative to the way the phone, still flat, said the person faced there [degrees,
    /// clockwise from north].
    public static func run(
        log path: String, options: LogReader.Options = .init(), calibration: Calibration.Options = .init(),
        facingDegrees: Double = 0, print: (String) -> Void
    ) throws -> Outcome {
        var calibration = calibration
        let halfWindow =
            Angle.signedDifference(from: calibration.northWindowStartDegrees, to: calibration.northWindowEndDegrees) / 2
        calibration.northWindowStartDegrees = Angle.normalized(facingDegrees - abs(halfWindow))
        calibration.northWindowEndDegrees = Angle.normalized(facingDegrees + abs(halfWindow))
        let read = try LogReader(options: options).read(path)
        var inputs: [(time: Double, input: Calibration.Input)] = []
        var headings = 0
        for entry in read.entries {
            switch entry.message {
            case let .heading(sample):
                headings += 1
                inputs.append((sample.timeSeconds, .heading(sample)))
            case let .attitude(attitude): inputs.append((attitude.timeSeconds, .attitude(attitude)))
            case let .fix(fix):
                if let speed = fix.speedMetersPerSecond {
                    inputs.append((fix.timeSeconds, .speed(timeSeconds: fix.timeSeconds, metersPerSecond: speed)))
                }
            case let .smoothed(fix):
                inputs.append(
                    (fix.timeSeconds, .speed(timeSeconds: fix.timeSeconds, metersPerSecond: fix.speedMetersPerSecond)))
            default: break
            }
        }
        var walkingFrom = "none"
        if inputs.contains(where: { if case .speed = $0.input { true } else { false } }) {
            walkingFrom = "speeds in the log"
        } else if read.format == .phyphox {
            let detection = StepDetection()
            let steps = try SensorLog.phyphoxSteps(folder: path, startTime: options.startTime)
            let times = inputs.compactMap { if case .heading = $0.input { $0.time } else { nil } }
            for (time, speed) in zip(times, detection.speeds(steps: steps, at: times)) {
                inputs.append((time, .speed(timeSeconds: time, metersPerSecond: speed)))
            }
            walkingFrom = "\(steps.count) steps in the accelerometer"
        }
        // In time order; at one time, speed and tilt before the heading they qualify.
        func rank(_ input: Calibration.Input) -> Int {
            switch input {
            case .speed: 0
            case .attitude: 1
            case .heading: 2
            }
        }
        inputs.sort { ($0.time, rank($0.input)) < ($1.time, rank($1.input)) }
        let origin = inputs.first?.time ?? 0
        var run = Calibration(options: calibration)
        var lastPrompt = ""
        var nearest: Double?
        for (time, input) in inputs {
            if case let .heading(sample) = input, run.step == .findNorth,
                nearest.map({
                    Angle.separation(sample.headingDegrees, facingDegrees) < Angle.separation($0, facingDegrees)
                })
                    ?? true
            {
                nearest = sample.headingDegrees
            }
            for message in run.update(input) {
                guard case let .calibrationState(state) = message, state.prompt != lastPrompt else { continue }
                lastPrompt = state.prompt
                let clock = fixedDecimal(time - origin, digits: 1)
                print(
                    "[\(String(repeating: " ", count: max(0, 6 - clock.count)))\(clock) s] [\(state.step.name)] \(state.prompt)"
                )
            }
            if run.result != nil { break }
        }
        // The offset is relative to the way the flat phone said the person faced, which the window centred on
        // `facingDegrees` found.
        return Outcome(
            result: run.result, step: run.step, headings: headings, walkingFrom: walkingFrom,
            nearestToReferenceDegrees: nearest)
    }
}
