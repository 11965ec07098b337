// swift-tools-version:6.1
import PackageDescription

// Release-build benchmark of the container backend:
//   cd Benchmarks/ContainerBench && swift run -c release ContainerBench
let package = Package(
    name: "ContainerBench",
    platforms: [.macOS(.v13)],
    dependencies: [
        .package(path: "../.."),
        .package(url: "https://github.com/apple/swift-crypto", from: "4.5.2"),
    ],
    targets: [
        .executableTarget(
            name: "ContainerBench",
            dependencies: [
                .product(name: "AssetPack", package: "main"),
                .product(name: "Crypto", package: "swift-crypto"),
            ]),
    ]
)
