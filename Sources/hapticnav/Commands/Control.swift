import ArgumentParser
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import NavCore
import Runtime
import SystemIO

struct ControlCommandLine: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "control",
        abstract: "The experimenter's hands: stop or resume every output of the haptic stages, or mark a moment.",
        discussion: """
            Waits for each sink's acknowledgement and prints it; exits 1 when a sink does not answer within the \
            time allowed (2 s), naming it. A stop holds until resume, also across a restart of the sink, and works \
            with Group 1 down. See docs/LAB.md, "Stopping the outputs".
            """)

    enum Action: String, ExpressibleByArgument, CaseIterable {
        case stop, resume, mark
    }

    @Argument(help: "stop, resume or mark.")
    var action: Action

    @Argument(help: "A mark's text (at most 200 bytes).")
    var text: [String] = []

    @Option(name: .shortAndLong, help: "The pipeline config whose haptic stages to command.")
    var config: String

    @Option(help: "The key pair (in the config's keys folder) to send with on encrypted links; one of the senders.")
    var key = "experimenter"

    @Option(help: "How long to wait for the acknowledgements [seconds].")
    var timeout = 2.0

    func validate() throws {
        let text = self.text.joined(separator: " ")
        if self.action == .mark, text.isEmpty {
            throw ValidationError("mark needs a text: hapticnav control mark 'crossing'")
        }
        if self.action != .mark, !text.isEmpty { throw ValidationError("only mark takes a text") }
        if text.utf8.count > ControlProtocol.maximumTextBytes {
            throw ValidationError(
                "the mark's text is \(text.utf8.count) bytes; at most \(ControlProtocol.maximumTextBytes)")
        }
        guard self.timeout > 0, self.timeout <= 30 else { throw ValidationError("--timeout is within 0…30 s") }
    }

    func run() async throws {
        let pipeline = try loadConfig(self.config, calibrationMayBeMissing: true)
        let command: NavCore.ControlCommand
        switch self.action {
        case .stop: command = .stop
        case .resume: command = .resume
        case .mark: command = .mark
        }
        var id = SystemRandomNumberGenerator()
        let request = ControlRequest(
            command: command, text: self.text.joined(separator: " "),
            requestID: String(id.next() & 0xffff_ffff_ffff, radix: 16), sentSeconds: SystemClock.wallSeconds())
        let outcomes: [ExperimenterControl.Outcome]
        do {
            outcomes = try await ExperimenterControl.send(
                request, pipeline: pipeline, keyName: self.key, timeoutSeconds: self.timeout)
        } catch let error as ConfigError {
            throw CommandFailure("\(error)")
        }
        var failed = false
        for outcome in outcomes {
            let took = fixedDecimal(outcome.seconds, digits: 3)
            switch outcome.result {
            case let .success(reply) where reply.accepted:
                print("\(outcome.stage): \(reply.message) (acknowledged in \(took) s)")
            case let .success(reply):
                failed = true
                print("\(outcome.stage): refused: \(reply.message)")
            case let .failure(failure):
                failed = true
                print(
                    "\(outcome.stage): NOT REACHED at \(outcome.endpoint): \(failure) (is the sink running there, and does it admit key '\(self.key)'?)"
                )
            }
        }
        if failed { throw ExitCode(1) }
    }
}
