// swift-tools-version:6.0
import PackageDescription

// Replication of DispatchStore's stores through NATS JetStream, as a package of its own so that the
// root package keeps no dependency: it links the nats.c client, which this package finds through
// pkg-config (`apt-get install libnats-dev`, `brew install cnats`).
let package = Package(
    name: "DispatchStoreNATS",
    platforms: [.macOS(.v13)],
    products: [
        .library(name: "DispatchStoreNATS", targets: ["DispatchStoreNATS"])
    ],
    dependencies: [
        // The repository this package lives in.
        .package(name: "DispatchStore", path: "../..")
    ],
    targets: [
        .systemLibrary(
            name: "CNATS",
            pkgConfig: "libnats",
            providers: [.apt(["libnats-dev"]), .brew(["cnats"])]
        ),
        .target(
            name: "DispatchStoreNATS",
            dependencies: [
                "CNATS", .product(name: "DispatchStore", package: "DispatchStore"),
                .product(name: "DispatchStoreJournal", package: "DispatchStore"),
            ]
        ),
        .testTarget(
            name: "DispatchStoreNATSTests",
            dependencies: [
                // nats-bench is the nemesis's replica process (`--nemesis-worker`).
                "DispatchStoreNATS", "CNATS", "NATSTestSupport", "TestSupport", "nats-bench",
                .product(name: "DispatchStore", package: "DispatchStore"),
                .product(name: "DispatchStoreJournal", package: "DispatchStore"),
            ]
        ),
        // The inventory demo with `--nats`: `swift run inventory --nats URL < events.jsonl`. Its core is
        // the root package's Demos/InventoryCore, linked here (Sources/InventoryCore is a symbolic link),
        // so that both programs are one module of one name and read each other's action logs.
        .target(
            name: "InventoryCore",
            dependencies: [
                .product(name: "DispatchStore", package: "DispatchStore"),
                .product(name: "DispatchStoreJournal", package: "DispatchStore"),
                .product(name: "DispatchStoreInspector", package: "DispatchStore"),
            ]
        ),
        .executableTarget(
            name: "inventory",
            dependencies: [
                "InventoryCore", "DispatchStoreNATS", .product(name: "DispatchStore", package: "DispatchStore"),
                .product(name: "DispatchStoreJournal", package: "DispatchStore"),
            ]
        ),
        .testTarget(
            name: "InventoryNATSTests",
            dependencies: [
                "InventoryCore", "DispatchStoreNATS", "inventory", "NATSTestSupport", "TestSupport",
                .product(name: "DispatchStore", package: "DispatchStore"),
                .product(name: "DispatchStoreJournal", package: "DispatchStore"),
            ]
        ),
        // The benchmark: `swift run -c release nats-bench`, against servers it starts (as the tests do).
        .executableTarget(
            name: "nats-bench",
            dependencies: [
                "DispatchStoreNATS", "CNATS", "NATSTestSupport",
                .product(name: "DispatchStore", package: "DispatchStore"),
                .product(name: "DispatchStoreJournal", package: "DispatchStore"),
            ]
        ),
        // The root package's test helpers (Tests/TestSupport is a symbolic link to them), and servers
        // for the tests: nats-server started on free ports of 127.0.0.1, stopped by process id.
        .target(
            name: "TestSupport",
            dependencies: [.product(name: "DispatchStore", package: "DispatchStore")],
            path: "Tests/TestSupport"
        ),
        .target(
            name: "NATSTestSupport",
            dependencies: [
                "DispatchStoreNATS", "TestSupport", .product(name: "DispatchStore", package: "DispatchStore"),
                .product(name: "DispatchStoreJournal", package: "DispatchStore"),
            ],
            path: "Tests/NATSTestSupport"
        ),
    ],
    swiftLanguageModes: [.v6]
)

for target in package.targets where target.type != .system {
    var settings = target.swiftSettings ?? []
    // Require `any` for existential types (SE-0335).
    settings.append(.enableUpcomingFeature("ExistentialAny"))
    // Members are visible only through modules imported in the same file (SE-0444).
    settings.append(.enableUpcomingFeature("MemberImportVisibility"))
    // Imports are internal unless marked `public` (SE-0409).
    settings.append(.enableUpcomingFeature("InternalImportsByDefault"))
    target.swiftSettings = settings
}
