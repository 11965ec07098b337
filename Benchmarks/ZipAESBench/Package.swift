// swift-tools-version:6.1
import PackageDescription

// Release-mode measurement of the zip backend's bulk WinZip AES path against libzip 1.7.3's own
// decrypting read, side by side on the same 64 MiB stored AES-256 entry, through the public API.
//   cd Benchmarks/ZipAESBench && swift run -c release ZipAESBench [runs]
let package = Package(
    name: "ZipAESBench",
    dependencies: [.package(path: "../..")],
    targets: [
        .executableTarget(name: "ZipAESBench", dependencies: [.product(name: "AssetPack", package: "AssetPack")])
    ]
)
