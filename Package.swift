// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "DispatchStore",
    platforms: [.macOS(.v13), .iOS(.v16), .tvOS(.v16), .watchOS(.v9)],
    products: [
        .library(name: "DispatchStore", targets: ["DispatchStore"]),
        // The action log, replay, the journal and its snapshots, for stores that outlive a process.
        .library(name: "DispatchStoreJournal", targets: ["DispatchStoreJournal"]),
        // Test support: `DispatcherTester`, for Swift Testing suites.
        .library(name: "DispatchStoreTesting", targets: ["DispatchStoreTesting"]),
        // The inspector: a run, a log or a journal as one self-contained HTML page.
        .library(name: "DispatchStoreInspector", targets: ["DispatchStoreInspector"]),
    ],
    dependencies: [],
    targets: [
        .target(name: "DispatchStore"),
        .testTarget(
            name: "DispatchStoreTests",
            dependencies: ["DispatchStore", "DispatchStoreJournal", "MainQueueProbe", "TestSupport"]
        ),
        .target(name: "DispatchStoreJournal", dependencies: ["DispatchStore"]),
        .testTarget(
            name: "DispatchStoreJournalTests",
            dependencies: ["DispatchStoreJournal", "DispatchStore", "TestSupport"]
        ),
        // The page's HTML, CSS and JavaScript are the files in Page/Assets, compiled in as
        // PageAssets.swift (written by Page/Assets/embed.py, checked against the files by a test), so
        // that a program copied to another machine needs nothing beside it.
        .target(
            name: "DispatchStoreInspector",
            dependencies: ["DispatchStore", "DispatchStoreJournal"],
            exclude: ["Page/Assets"]
        ),
        .testTarget(
            name: "DispatchStoreInspectorTests",
            dependencies: ["DispatchStoreInspector", "DispatchStore", "DispatchStoreJournal", "TestSupport"]
        ),
        // Headless Chromium driven through the DevTools protocol over a pipe, for the browser tests
        // and the benchmark's page scenarios; they are skipped where no Chromium is installed.
        .target(name: "BrowserDriver", path: "Tests/BrowserDriver"),
        .testTarget(
            name: "InspectorBrowserTests",
            dependencies: [
                "BrowserDriver", "DispatchStoreInspector", "DispatchStore", "DispatchStoreJournal", "TestSupport",
                "InventoryCore", "inventory", "todo",
            ]
        ),
        // Imports the toolchain's `Testing` module, which needs no package dependency.
        .target(name: "DispatchStoreTesting", dependencies: ["DispatchStore"]),
        .testTarget(
            name: "DispatchStoreTestingTests",
            dependencies: ["DispatchStoreTesting", "DispatchStore", "TestSupport"]
        ),
        // What the test targets share: fixtures, synchronisation helpers, running the built programs.
        .target(name: "TestSupport", dependencies: ["DispatchStore"], path: "Tests/TestSupport"),
        // The todo demo: `swift run todo`.
        .target(name: "TodoCore", dependencies: ["DispatchStore"], path: "Demos/TodoCore"),
        .executableTarget(
            name: "todo",
            dependencies: ["TodoCore", "DispatchStore", "DispatchStoreInspector"],
            path: "Demos/todo"
        ),
        .testTarget(name: "TodoTests", dependencies: ["TodoCore", "DispatchStore", "todo", "TestSupport"]),
        // The service demo: `swift run inventory`.
        .target(
            name: "InventoryCore",
            dependencies: ["DispatchStore", "DispatchStoreJournal", "DispatchStoreInspector"],
            path: "Demos/InventoryCore"
        ),
        .executableTarget(
            name: "inventory",
            dependencies: ["InventoryCore", "DispatchStore", "DispatchStoreJournal"],
            path: "Demos/inventory"
        ),
        .testTarget(
            name: "InventoryTests",
            dependencies: ["InventoryCore", "DispatchStore", "DispatchStoreJournal", "inventory", "TestSupport"]
        ),
        // The file contracts, library and demos: every entry point that takes a path against every
        // kind of bad file, each bounded by a watchdog.
        .testTarget(
            name: "FileContractTests",
            dependencies: ["DispatchStore", "DispatchStoreJournal", "TestSupport", "todo", "inventory"]
        ),
        // The benchmark: `swift run -c release dispatch-bench`.
        .executableTarget(
            name: "dispatch-bench",
            dependencies: [
                "DispatchStore", "DispatchStoreJournal", "TodoCore", "DispatchStoreInspector", "InventoryCore",
                "BrowserDriver",
            ],
            path: "Demos/dispatch-bench"
        ),
        .testTarget(name: "DispatchBenchTests", dependencies: ["dispatch-bench", "TestSupport"]),
        // A program the tests run to check `.mainThread` under RunLoop.main.run() and dispatchMain().
        .executableTarget(
            name: "MainQueueProbe",
            dependencies: ["DispatchStore"],
            path: "Tests/MainQueueProbe"
        ),
    ],
    swiftLanguageModes: [.v6]
)

for target in package.targets {
    var settings = target.swiftSettings ?? []
    // Require `any` for existential types (SE-0335).
    settings.append(.enableUpcomingFeature("ExistentialAny"))
    // Members are visible only through modules imported in the same file (SE-0444).
    settings.append(.enableUpcomingFeature("MemberImportVisibility"))
    // Imports are internal unless marked `public` (SE-0409).
    settings.append(.enableUpcomingFeature("InternalImportsByDefault"))
    target.swiftSettings = settings
}
