import Foundation
import SystemIO

/// A single-node Slurm cluster of a test's own, as a lab's cluster runs (Debian's slurmctld, slurmd and munge; root
/// only): munged with a fresh key on a socket of its own, slurmctld and slurmd on free loopback ports, their state,
/// spool and logs in a scratch folder. Commands reach it through ``environment`` (SLURM_CONF). ``stop()`` ends the
/// daemons; nothing of the machine's own Slurm or munge (if any) is touched.
public final class SlurmCluster: @unchecked Sendable {
    public let folder: String
    /// What `sbatch`, `sinfo` and the others need to reach this cluster.
    public let environment: [String: String]
    /// Started with posix_spawn and reaped with waitpid (SystemIO's): a daemon that forks helpers of its own would
    /// hold open the pipe by which Foundation's Process learns that a child ended.
    private var daemons: [SystemIO.ChildProcess] = []

    /// Starts the daemons and waits (at most `seconds`) until the node is idle.
    public init(seconds: Double = 60) async throws {
        for tool in [
            "/usr/sbin/munged", "/usr/sbin/slurmctld", "/usr/sbin/slurmd", "/usr/bin/sbatch", "/usr/bin/sinfo",
        ]
        where !FileManager.default.isExecutableFile(atPath: tool) {
            throw TestProcessError(
                "\(tool) is missing: scripts/setup installs Slurm (slurmctld, slurmd, slurm-client, munge)")
        }
        let folder = try scratchFolder()
        self.folder = folder
        for sub in ["state", "spool"] {
            try FileManager.default.createDirectory(atPath: "\(folder)/\(sub)", withIntermediateDirectories: true)
        }
        // munged wants its key readable by its owner only.
        var key = [UInt8](repeating: 0, count: 1024)
        for index in key.indices { key[index] = UInt8.random(in: 0...255) }
        let keyFile = "\(folder)/munge.key"
        _ = FileManager.default.createFile(atPath: keyFile, contents: Data(key), attributes: [.posixPermissions: 0o400])
        var name = [CChar](repeating: 0, count: 256)
        gethostname(&name, name.count)
        let host =
            String(decoding: name.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            .split(separator: ".").first.map(String.init) ?? "localhost"
        let conf = """
            ClusterName=hapticnav
            SlurmctldHost=\(host)(127.0.0.1)
            SlurmctldPort=\(freeTCPPort())
            SlurmdPort=\(freeTCPPort())
            SlurmUser=root
            SlurmdUser=root
            AuthType=auth/munge
            AuthInfo=socket=\(folder)/munge.sock
            CredType=cred/munge
            StateSaveLocation=\(folder)/state
            SlurmdSpoolDir=\(folder)/spool
            SlurmctldPidFile=\(folder)/slurmctld.pid
            SlurmdPidFile=\(folder)/slurmd.pid
            SlurmctldLogFile=\(folder)/slurmctld.log
            SlurmdLogFile=\(folder)/slurmd.log
            ProctrackType=proctrack/linuxproc
            TaskPlugin=task/none
            JobAcctGatherType=jobacct_gather/none
            AccountingStorageType=accounting_storage/none
            JobCompType=jobcomp/none
            SchedulerType=sched/backfill
            SelectType=select/cons_tres
            SelectTypeParameters=CR_Core
            SlurmdParameters=config_overrides
            ReturnToService=2
            MpiDefault=none
            NodeName=hapticnav NodeHostname=\(host) NodeAddr=127.0.0.1 CPUs=2 State=UNKNOWN
            PartitionName=walkers Nodes=hapticnav Default=YES MaxTime=INFINITE State=UP

            """
        let confFile = "\(folder)/slurm.conf"
        try conf.store(toFile: confFile)
        self.environment = ["SLURM_CONF": confFile]
        self.daemons.append(
            try SystemIO.ChildProcess(
                executable: "/usr/sbin/munged",
                arguments: [
                    "--force", "--foreground", "--key-file=\(keyFile)", "--socket=\(folder)/munge.sock",
                    "--pid-file=\(folder)/munged.pid", "--log-file=\(folder)/munged.log",
                    "--seed-file=\(folder)/munged.seed",
                ]))
        guard await eventually(within: seconds, { FileManager.default.fileExists(atPath: "\(folder)/munge.sock") })
        else {
            let logs = self.logs
            self.stop()
            throw TestProcessError("munged did not start:\n\(logs)")
        }
        self.daemons.append(
            try SystemIO.ChildProcess(executable: "/usr/sbin/slurmctld", arguments: ["-D", "-i", "-f", confFile]))
        self.daemons.append(
            try SystemIO.ChildProcess(
                executable: "/usr/sbin/slurmd", arguments: ["-D", "-N", "hapticnav", "-f", confFile]))
        // A controller that ended (its port taken) ends the wait: the node would never become idle.
        let controller = self.daemons[1]
        let idle = await eventually(within: seconds) {
            guard controller.isRunning else { return true }
            let sinfo = await self.command("/usr/bin/sinfo", ["-h", "-o", "%T"], seconds: 10)
            return sinfo.status == 0 && sinfo.output.trimmingCharacters(in: .whitespacesAndNewlines) == "idle"
        }
        guard idle, controller.isRunning else {
            let logs = self.logs
            self.stop()
            throw TestProcessError("the Slurm node did not become idle within \(seconds) s:\n\(logs)")
        }
    }

    /// Starts a cluster as ``init(seconds:)`` does, and again on other ports (at most `attempts` times in all) when a
    /// daemon found its port taken: a port is free when drawn and bound a moment later, and in between any program on
    /// the machine (a parallel test's outgoing connection) may take it.
    public static func start(seconds: Double = 60, attempts: Int = 3) async throws -> SlurmCluster {
        var attempt = 1
        while true {
            do {
                return try await SlurmCluster(seconds: seconds)
            } catch let error as TestProcessError
                where attempt < attempts && error.description.contains("Address already in use")
            {
                attempt += 1
            }
        }
    }

    /// Runs a Slurm command (`sbatch`, `sinfo`, …) against this cluster, for at most `seconds` (then it is killed):
    /// its exit status (nil when it was killed) and its standard output and error together.
    public func command(
        _ tool: String, _ arguments: [String], environment: [String: String] = [:], seconds: Double
    ) async -> (status: Int32?, output: String) {
        let assignments = self.environment.merging(environment) { $1 }.map { "\($0.key)=\($0.value)" }.sorted()
        let log = "\(self.folder)/command-\(UUID().uuidString.prefix(8)).log"
        guard
            let process = try? SystemIO.ChildProcess(
                executable: "/bin/sh",
                arguments: ["-c", "exec \"$0\" \"$@\" > \"\(log)\" 2>&1", "/usr/bin/env"] + assignments + [tool]
                    + arguments)
        else { return (nil, "\(tool) could not be started") }
        let ended = await eventually(within: seconds) { !process.isRunning }
        if !ended {
            process.signal(SIGKILL)
            process.wait()
        }
        let output = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
        return (ended ? process.wait() : nil, output)
    }

    /// The daemons' logs, for a failure's message.
    public var logs: String {
        ["slurmctld.log", "slurmd.log", "munged.log"].map { name in
            "--- \(name)\n"
                + ((try? String(contentsOfFile: "\(self.folder)/\(name)", encoding: .utf8))?.suffix(3000) ?? "")
        }.joined(separator: "\n")
    }

    /// Cancels every job (their tasks would otherwise outlive the daemons and keep the machine busy), then ends the
    /// daemons (slurmd and slurmctld first, munged last), each given 5 s to go before it is killed.
    public func stop() {
        if self.daemons.count == 3,
            let scancel = try? SystemIO.ChildProcess(
                executable: "/usr/bin/env",
                arguments: [
                    "SLURM_CONF=\(self.folder)/slurm.conf", "/usr/bin/scancel", "--full", "--partition=walkers",
                ])
        {
            let deadline = Date().addingTimeInterval(5)
            while scancel.isRunning && Date() < deadline { usleep(20_000) }
            scancel.signal(SIGKILL)
            scancel.wait()
            // The tasks' processes end with their steps: wait (bounded) until slurmd has no step left.
            let spool = "\(self.folder)/spool"
            let stepsGone = Date().addingTimeInterval(10)
            while Date() < stepsGone,
                // A step's socket there is named after the node: hapticnav_JOB.STEP.
                ((try? FileManager.default.contentsOfDirectory(atPath: spool)) ?? []).contains(where: {
                    $0.hasPrefix("hapticnav_")
                })
            {
                usleep(50_000)
            }
        }
        for daemon in self.daemons.reversed() {
            daemon.signal(SIGTERM)
            let deadline = Date().addingTimeInterval(5)
            while daemon.isRunning && Date() < deadline { usleep(20_000) }
            daemon.signal(SIGKILL)
            daemon.wait()
        }
        self.daemons = []
    }

    deinit { self.stop() }
}
