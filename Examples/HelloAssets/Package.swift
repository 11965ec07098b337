// swift-tools-version:6.1
import PackageDescription

// HelloAssets: Sources/HelloAssets/Assets/ is packed into an encrypted assets.pack by the
// PackAssets build-tool plugin during `swift build`, bundled as a resource, and read at run time.
// Build and run it with `make example` at the repository root.
let package = Package(
    name: "HelloAssets",
    platforms: [.macOS(.v13)],
    dependencies: [
        .package(name: "AssetPack", path: "../..")
    ],
    targets: [
        .executableTarget(
            name: "HelloAssets",
            dependencies: [.product(name: "AssetPack", package: "AssetPack")],
            // The plugin reads these; they are not resources themselves (the pack is).
            exclude: ["Assets", "assetpack.json"],
            plugins: [.plugin(name: "PackAssets", package: "AssetPack")])
    ]
)
