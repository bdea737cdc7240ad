// swift-tools-version:6.2
import PackageDescription

/// A stage's target's dependencies: the shared core, what stages share, and its group's logic.
func stage(_ logic: Target.Dependency...) -> [Target.Dependency] {
    [
        "NavCore", "Stages", "SystemIO", .product(name: "Logging", package: "swift-log"),
        .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
    ] + logic
}

let package = Package(
    name: "hapticnav",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "hapticnav", targets: ["hapticnav"]),
        .library(name: "NavCore", targets: ["NavCore"]),
        .library(name: "MapLogic", targets: ["MapLogic"]),
        .library(name: "HapticLogic", targets: ["HapticLogic"]),
        .library(name: "Bus", targets: ["Bus"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.13.0"),
    ],
    targets: [
        // The three rooms, pure values and state machines without I/O. The shared core: messages, wire codec,
        // geodesy, time, settings, the sources' contract and the true-north conversion. Both groups stand on it.
        .target(name: "NavCore"),
        // Group 1's logic (map logic): the smoother, the walking graph, the place on the ways, route tracking, turn
        // events. Nothing of Group 2 reaches it, and it reaches nothing of Group 2.
        .target(name: "MapLogic", dependencies: ["NavCore"]),
        // Group 2's logic (haptic logic): guidance, the pocket calibration, the sink's fail-safe, its output devices'
        // contract and fallback. It never sees the map.
        .target(name: "HapticLogic", dependencies: ["NavCore"]),

        // Files, threads and child processes over the C library: what stages need of an OS, without Foundation.
        .target(name: "SystemIO", dependencies: ["CSpawn"]),
        // What glibc offers posix_spawn and Swift's Glibc module does not show (closing every inherited descriptor).
        .target(name: "CSpawn"),

        // libzmq, reached through the system library (Debian: libzmq3-dev).
        .systemLibrary(name: "CZeroMQ", path: "Sources/CZeroMQ"),

        // The transport: sockets, envelopes, heartbeats, per-topic queues.
        .target(
            name: "Bus",
            dependencies: [
                "NavCore", "CZeroMQ", "SystemIO",
                .product(name: "Logging", package: "swift-log"),
            ]
        ),

        // The stage actors, a target each (Sources/Stages/<stage>), on what every stage shares (Sources/Stages/Common:
        // the stage's clock, its status, its input's time check). They see an AsyncSequence in and a publisher
        // protocol out, never ZeroMQ; Group 1's stages reach map logic only, the haptic stage haptic logic only.
        .target(
            name: "Stages",
            dependencies: [
                "NavCore", "SystemIO", .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            path: "Sources/Stages/Common"
        ),
        .target(name: "StageSource", dependencies: stage(), path: "Sources/Stages/Source"),
        .target(name: "StageSmoother", dependencies: stage("MapLogic"), path: "Sources/Stages/Smoother"),
        .target(name: "StageRoute", dependencies: stage("MapLogic"), path: "Sources/Stages/Route"),
        .target(name: "StageHaptic", dependencies: stage("HapticLogic"), path: "Sources/Stages/Haptic"),
        .target(name: "StageRecorder", dependencies: stage(), path: "Sources/Stages/Recorder"),

        // Plugins: one target per swappable part.
        .target(
            name: "SimSource",
            dependencies: ["MapFiles", "NavCore", "MapLogic", "Parsers", "SystemIO"],
            path: "plugins/SimSource"
        ),
        // libxml2, reached through the system library (Debian: libxml2-dev), and the parsers plugins share.
        .target(
            name: "CXMLSAX", cSettings: [.unsafeFlags(["-I/usr/include/libxml2"])],
            linkerSettings: [.linkedLibrary("xml2")]),
        // zlib (Debian: zlib1g-dev), for the compressed blocks of OpenStreetMap PBF files.
        .systemLibrary(name: "CZlib", path: "Sources/CZlib"),
        // Support (Sources/Support): libraries beneath the plugins, not plugins themselves. The readers plugins share
        // (GPX, receivers' logs, route files, timestamps, input files), over libxml2 where XML.
        .target(name: "Parsers", dependencies: ["NavCore", "CXMLSAX", "SystemIO"], path: "Sources/Support/Parsers"),
        // Maps: OpenStreetMap XML and PBF, and the walking graph's cache.
        .target(
            name: "MapFiles", dependencies: ["NavCore", "MapLogic", "Parsers", "CZlib", "SystemIO"],
            path: "Sources/Support/MapFiles"),
        // Sessions: MCAP files (written and read) and the session folders around them.
        .target(
            name: "SessionFiles", dependencies: ["NavCore", "Parsers", "CZlib", "SystemIO"],
            path: "Sources/Support/SessionFiles"),
        // Byte streams to devices and servers (TCP, serial, pty), read on their own threads.
        .target(name: "Links", dependencies: ["NavCore", "SystemIO"], path: "Sources/Support/Links"),
        // The fuzzer's targets: the servers strangers reach and the clients of servers on the lab's network, fed
        // whole connections over socket pairs, each with the promises it keeps checked (scripts/fuzz, FuzzingTests).
        .target(
            name: "Fuzzing",
            dependencies: [
                "Links", "LocationSources", "Routers", "Lab", "NavCore", "SystemIO",
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Sources/Support/Fuzzing"),
        // libFuzzer's driver over them (built with -sanitize=fuzzer by scripts/fuzz), or a replay of saved inputs.
        .executableTarget(
            name: "hapticnav-fuzz", dependencies: ["Fuzzing", "SystemIO"], path: "Sources/hapticnav-fuzz"),
        .target(
            name: "LocationSources",
            dependencies: [
                "SessionFiles",
                "NavCore", "Links", "Parsers", "SystemIO", .product(name: "Logging", package: "swift-log"),
            ],
            path: "plugins/LocationSources"
        ),
        .target(
            name: "Smoothers",
            dependencies: ["NavCore", "MapLogic"],
            path: "plugins/Smoothers"
        ),
        .target(
            name: "Routers",
            dependencies: [
                "MapFiles", "NavCore", "MapLogic", "Parsers", "Links", .product(name: "Logging", package: "swift-log"),
            ],
            path: "plugins/Routers"
        ),
        // posix_openpt and friends, which Swift's Glibc module leaves out.
        .target(name: "CPseudoTerminal"),
        // A crashing process's last act: write each motor device's stop frame from the fatal-signal handler.
        .target(name: "CEmergencyStop"),
        .target(
            name: "Devices",
            dependencies: [
                "NavCore", "HapticLogic", "Links", "SystemIO", "CPseudoTerminal", "CEmergencyStop",
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "plugins/Devices"
        ),
        .target(
            name: "Sinks",
            dependencies: [
                "SessionFiles", "NavCore", "Parsers", "SystemIO", .product(name: "Logging", package: "swift-log"),
            ],
            path: "plugins/Sinks"
        ),

        // The session tools: a session's report, its export (CSV, GPX, GeoJSON, MCAP for Foxglove), the live monitor.
        .target(
            name: "SessionTools",
            dependencies: [
                "NavCore", "MapLogic", "Bus", "Parsers", "SessionFiles", "Stages", "StageHaptic", "SystemIO",
            ]
        ),

        // Config loading, plugin registry, process launcher, one ServiceGroup per process.
        .target(
            name: "Runtime",
            dependencies: [
                "SessionTools",
                "SessionFiles",
                "NavCore", "MapLogic", "HapticLogic", "Bus", "CSpawn", "SystemIO", "Stages", "StageSource",
                "StageSmoother", "StageRoute",
                "StageHaptic", "StageRecorder", "SimSource", "LocationSources", "Smoothers",
                "Routers",
                "Devices", "Sinks", "Parsers", "Links", "Evaluation",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
            ]
        ),
        // The lab around a walk: a study's plan, trials and report, the preflight, the Foxglove bridge, the walkable
        // ways a report draws.
        .target(
            name: "Lab",
            dependencies: [
                "Runtime", "SessionTools", "Evaluation", "NavCore", "MapLogic", "HapticLogic", "Stages", "StageHaptic",
                "LocationSources", "Bus", "Links", "Parsers", "Routers", "SystemIO",
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // Evaluation and benchmarks: simulated walkers, smoother and guidance statistics, route benchmarks. The CLI
        // uses it; the pipeline never does.
        .target(
            name: "Evaluation",
            dependencies: [
                "MapFiles",
                "NavCore", "MapLogic", "HapticLogic", "Bus", "CZeroMQ", "SystemIO", "Routers", "Parsers", "Devices",
                "Links", "LocationSources",
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .executableTarget(
            name: "hapticnav",
            dependencies: [
                "SessionTools",
                "MapFiles", "SessionFiles",
                "Runtime", "Lab", "Evaluation", "Bus", "NavCore", "MapLogic", "HapticLogic", "SystemIO",
                "LocationSources",
                "Parsers", "Devices", "Links",
                "Routers",
                "Stages", "StageHaptic", "Sinks",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),

        .target(name: "TestSupport", dependencies: ["NavCore", "Links", "SystemIO"], path: "Tests/TestSupport"),
        .testTarget(name: "NavCoreTests", dependencies: ["NavCore"], exclude: ["Fixtures"]),
        .testTarget(name: "MapLogicTests", dependencies: ["MapLogic", "NavCore"]),
        .testTarget(name: "HapticLogicTests", dependencies: ["HapticLogic", "NavCore"]),
        .testTarget(
            name: "LinksTests", dependencies: ["Links", "SystemIO", "NavCore", "TestSupport", "CPseudoTerminal"]),
        // The fuzzer's targets on their seeds (Tests/FuzzingTests/Seeds, scripts/fuzz's starting corpus) and on
        // inputs mutated from them.
        .testTarget(
            name: "FuzzingTests", dependencies: ["Fuzzing", "NavCore", "TestSupport"], exclude: ["Seeds"]),
        .testTarget(
            name: "EvaluationTests",
            dependencies: ["Evaluation", "NavCore", "MapLogic", "LocationSources", "Links", "SystemIO", "Devices"]),
        .testTarget(
            name: "BusTests",
            dependencies: [
                "Bus", "NavCore", "Links", "TestSupport", .product(name: "Logging", package: "swift-log"),
            ]),
        .testTarget(
            name: "RuntimeTests",
            dependencies: [
                "SessionTools",
                "SessionFiles",
                "Runtime", "Bus", "NavCore", "MapLogic", "Stages", "StageSource", "StageSmoother", "StageRoute",
                "StageRecorder", "SimSource", "Sinks", "Routers", "Parsers", "Evaluation",
                "Links", "SystemIO", "TestSupport", .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]),
        .testTarget(
            name: "LabTests",
            dependencies: ["Lab", "Runtime", "SessionTools", "Evaluation", "NavCore", "TestSupport"]),
        .testTarget(
            name: "DevicesTests",
            dependencies: [
                "Devices", "Stages", "StageHaptic", "NavCore", "MapLogic", "HapticLogic", "Links", "TestSupport",
                .product(name: "Logging", package: "swift-log"),
            ]),
        .testTarget(
            name: "RoutersTests",
            dependencies: ["MapFiles", "Routers", "Parsers", "Evaluation", "NavCore", "MapLogic", "TestSupport"]),
        .testTarget(
            name: "LocationSourcesTests",
            dependencies: [
                "LocationSources", "Parsers", "NavCore", "Links", "TestSupport",
                .product(name: "Logging", package: "swift-log"),
            ],
            exclude: ["Fixtures"]),
        .testTarget(
            name: "EndToEndTests",
            dependencies: [
                "SessionTools",
                "SessionFiles",
                "Bus", "NavCore", "Parsers", "TestSupport", "Devices", "Links", "Runtime",
                .product(name: "Logging", package: "swift-log"),
            ]),
    ]
)

for target in package.targets
where target.type != .system && !["CPseudoTerminal", "CEmergencyStop", "CXMLSAX", "CSpawn"].contains(target.name) {
    var settings = target.swiftSettings ?? []
    settings.append(.enableUpcomingFeature("ExistentialAny"))
    settings.append(.enableUpcomingFeature("InternalImportsByDefault"))
    settings.append(.enableUpcomingFeature("MemberImportVisibility"))
    target.swiftSettings = settings
}
