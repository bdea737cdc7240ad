import SessionTools
import Runtime
import SystemIO

/// Reads a session for a command; says on standard error what reading skipped (records that could not be read, parts
/// left unclosed); a session that cannot be read is the command's failure.
func readSession(_ path: String) throws -> SessionExport.Session {
    let session: SessionExport.Session
    do {
        session = try SessionExport.read(path)
    } catch {
        throw CommandFailure("\(error)")
    }
    reportSessionProblems(path, badRecords: session.badLines, firstBad: session.firstBad, cutFiles: session.cutFiles)
    return session
}

/// Says on standard error what reading a session skipped: records that could not be read, parts left unclosed.
func reportSessionProblems(_ path: String, badRecords: Int, firstBad: String?, cutFiles: [(file: String, atByte: Int)])
{
    if badRecords > 0 {
        StandardStreams.writeError(
            "\(path): \(badRecords) record(s) could not be read and were skipped (the first: \(firstBad ?? "?"))\n")
    }
    for (file, byte) in cutFiles {
        StandardStreams.writeError(
            "\(file): not closed (its recorder stopped first); read to its last complete record at byte \(byte)\n")
    }
}
