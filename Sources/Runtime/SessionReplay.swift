public import SessionFiles
public import Bus
public import NavCore
import Parsers
import SystemIO

/// `hapticnav replay`: publishes a recorded session's messages again, with their recorded spacing (scaled), or as fast
/// as they go. Each message goes out as recorded (its own measurement times), in the order it was recorded, from one
/// publisher: a stage reading the replay sees what the recorder saw, in the same order, whatever the rate.
public enum SessionReplay {
    /// What to play and how fast.
    public struct Options: Sendable {
        /// Rate: 1 real time, 10 ten times faster; 0 as fast as the subscribers take them.
        public var rate: Double = 1
        /// Only these topics; empty for all.
        public var topics: Set<BusMessage.Kind> = []
        /// Only messages these stages sent; empty for all.
        public var stages: Set<String> = []
        /// Play from this long after the session's first message [seconds]; nil from the start.
        public var fromSeconds: Double?
        /// Play up to this long after the session's first message [seconds]; nil to the end.
        public var toSeconds: Double?

        /// Options with the defaults: everything, at real time.
        public init() {}
    }

    /// What a replay did.
    public struct Outcome: Sendable {
        /// Messages published [count].
        public var published = 0
        /// Messages read from the session, played or not [count].
        public var read = 0
        /// From the first read to the last publish [seconds].
        public var seconds = 0.0
        /// What reading the session found (bad records, cut files).
        public var summary: SessionReader.Summary
    }

    /// Why a replay did not start.
    public struct Failure: Error, CustomStringConvertible {
        public var description: String
    }

    /// Waits until `publisher` (lossless) has `subscribers` subscriber sockets, at most `seconds`.
    public static func waitForSubscribers(_ subscribers: Int, on publisher: BusPublisher, seconds: Double) throws {
        guard subscribers > 0 else { return }
        let deadline = ContinuousClock.now + .seconds(seconds)
        while publisher.subscriberCount < subscribers {
            guard ContinuousClock.now < deadline else {
                throw Failure(
                    description:
                        "\(publisher.subscriberCount) of \(subscribers) subscriber(s) joined \(publisher.endpoints.joined(separator: ", ")) within \(seconds) s"
                )
            }
            SystemThread.sleep(seconds: 0.005)
        }
    }

    /// Plays `session` on `publisher`; blocks until the last message is handed to the bus.
    public static func run(
        session: String, publisher: BusPublisher, options: Options,
        shouldStop: @Sendable () -> Bool = { false }
    ) throws -> Outcome {
        let clock = ContinuousClock()
        let started = clock.now
        var sessionStart: Double?
        var playStart: (wall: ContinuousClock.Instant, session: Double)?
        var published = 0
        var read = 0
        let summary: SessionReader.Summary
        do {
            summary = try SessionReader.read(session) { record in
                read += 1
                if shouldStop() { throw SessionReader.Stop() }
                let time = record.recordedClockSeconds
                let start = sessionStart ?? time
                sessionStart = start
                if let from = options.fromSeconds, time - start < from { return }
                if let to = options.toSeconds, time - start > to { throw SessionReader.Stop() }
                guard options.topics.isEmpty || options.topics.contains(record.message.kind),
                    options.stages.isEmpty || options.stages.contains(record.stage)
                else { return }
                if options.rate > 0 {
                    let anchor = playStart ?? (clock.now, time)
                    playStart = anchor
                    let due = anchor.wall + .seconds(max(0, time - anchor.session) / options.rate)
                    let wait = clock.now.duration(to: due)
                    if wait > .zero { SystemThread.sleep(seconds: wait.inSeconds) }
                }
                try publisher.send(record.message)
                published += 1
            }
        } catch let failure as SessionReader.Failure {
            throw Failure(description: failure.description)
        }
        return Outcome(
            published: published, read: read, seconds: started.duration(to: clock.now).inSeconds, summary: summary)
    }
}
