import ArgumentParser
import Bus

struct KeysCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "keys", abstract: "CURVE key pairs for encrypted links.", subcommands: [Generate.self])

    struct Generate: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Write NAME.key (secret, mode 0600) and NAME.pub (public) into a folder.")

        @Argument(help: "The key's name, as the config's `key` and `readers` name it (for example group1).")
        var name: String

        @Option(help: "The keys folder (created 0700 when missing).")
        var out: String

        @Flag(help: "Replace an existing key pair of that name.")
        var force = false

        func validate() throws {
            guard !self.name.isEmpty, self.name.allSatisfy({ $0.isLetter || $0.isNumber || "-_.".contains($0) }),
                !self.name.hasPrefix(".")
            else {
                throw ValidationError("NAME: letters, digits, '-', '_' and '.' only, for example group1")
            }
        }

        func run() throws {
            if !self.force, (try? CurveKeyPair.loadPublic(file: "\(self.out)/\(self.name).pub")) != nil {
                throw CommandFailure(
                    "\(self.out)/\(self.name).pub exists: keep it, or replace it with --force (its peers then need the new public key)"
                )
            }
            do {
                let pair = try CurveKeyPair.generate()
                try pair.write(name: self.name, folder: self.out)
                print("\(self.out)/\(self.name).key (secret, 0600) and \(self.out)/\(self.name).pub: \(pair.publicKey)")
            } catch {
                throw CommandFailure("\(error)")
            }
        }
    }
}
