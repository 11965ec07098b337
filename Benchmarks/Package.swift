// swift-tools-version:6.1
import PackageDescription

// Release-mode benchmarks of the two backends, one build for both:
//   cd Benchmarks && swift run -c release ContainerBench
//   cd Benchmarks && swift run -c release ZipAESBench [runs]
// The product-level comparison of both backends on any tree is `assetpack perf` (docs/PERFORMANCE.md).
let package = Package(
    name: "AssetPackBenchmarks",
    platforms: [.macOS(.v13)],
    dependencies: [
        .package(name: "AssetPack", path: ".."),
        .package(url: "https://github.com/apple/swift-crypto", from: "4.5.2"),
    ],
    targets: [
        .executableTarget(
            name: "ContainerBench",
            dependencies: [
                .product(name: "AssetPack", package: "AssetPack"),
                .product(name: "Crypto", package: "swift-crypto"),
            ]),
        .executableTarget(
            name: "ZipAESBench", dependencies: [.product(name: "AssetPack", package: "AssetPack")]),
    ]
)
