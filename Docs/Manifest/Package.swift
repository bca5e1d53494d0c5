// swift-tools-version:6.0
// The manifest of Docs/GettingStarted.md: an application that depends on DispatchStore.
// Docs/build-docs.sh checks that it loads (`swift package dump-package`).

import PackageDescription

// sample: manifest
let package = Package(
    name: "App",
    dependencies: [
        .package(url: "https://github.com/<owner>/DispatchStore.git", from: "0.1.0")
    ],
    targets: [
        .executableTarget(name: "App", dependencies: ["DispatchStore"])
    ]
)
// end-sample
