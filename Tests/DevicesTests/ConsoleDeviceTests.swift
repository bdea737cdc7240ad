import Devices
import NavCore
import Testing

@Suite struct ConsoleDeviceTests {
    private func settings(_ object: [String: SettingValue]) throws -> Settings {
        try Settings(.object(object), path: "stages.haptic.settings", baseDirectory: "/")
    }

    @Test func linesThatGoNowhereAreStillCountedAndAWrongOutputIsAClearError() async throws {
        let quiet = try ConsoleDevice(settings: try self.settings(["output": "none"]))
        await quiet.render(HapticCue(timeSeconds: 1, kind: .turnLeft, intensity: 0.8, deviationDegrees: -60))
        await quiet.render(HapticCue(timeSeconds: 2, kind: .turnLeft, intensity: 0.8, deviationDegrees: -61))
        await quiet.render(HapticCue(timeSeconds: 3, kind: .silent, intensity: 0, deviationDegrees: 2))
        // A line per change of cue: two.
        #expect(await quiet.summary() == "2 line(s)")
        #expect(throws: ConfigError.self) { try ConsoleDevice(settings: try self.settings(["output": "loud"])) }
        do {
            _ = try ConsoleDevice(settings: try self.settings(["output": "loud"]))
        } catch {
            #expect("\(error)".contains("stdout, stderr, none"), "\(error)")
        }
    }
}
