// swift-tools-version:6.1
import PackageDescription

/// The test targets' code has no DWARF: compiling its macro-expanded expectations with debug info
/// was 7 of the 105 s a cold test build took on 2 cores (README, "Tests come in two tiers"). The
/// libraries keep theirs, and a failing expectation still names its file and line (the macro puts
/// them in). To step through a test in lldb, build without this setting.
/// What a target links only in the default configuration (the `SystemLibraries` trait).
let system = TargetDependencyCondition.when(traits: ["SystemLibraries"])

let testSettings: [SwiftSetting] = [.unsafeFlags(["-Xfrontend", "-gnone"])]

let package = Package(
    name: "AssetPack",
    platforms: [.macOS(.v13)],
    products: [
        // What an app links to read its bundled packs: no HTTP client, no libcurl.
        .library(name: "AssetPack", targets: ["AssetPack"]),
        // Packs read and installed from HTTP(S) URLs (range requests, delta updates): AssetPack
        // plus libcurl, for the apps that download packs.
        .library(name: "AssetPackRemote", targets: ["AssetPackRemote"]),
        .executable(name: "assetpack", targets: ["assetpack"]),
        // Build-tool plugin: packs a target's Assets/ folder into an encrypted pack resource during `swift build`.
        .plugin(name: "PackAssets", targets: ["PackAssets"]),
    ],
    // The default configuration links the system's fast libraries (Linux with Debian's -dev packages);
    // without the trait (`--disable-default-traits`, `make portable`) the AssetPack product needs only
    // zlib and swift-crypto, what iOS, macOS and the Android NDK have. docs/ARCHITECTURE.md, "Configurations".
    traits: [
        .trait(
            name: "SystemLibraries",
            description:
                "libzip (ZipCrypto), libdeflate (inflate, CRC-32), libzstd (the zstd codec) and OpenSSL's libcrypto (the AES-ECB keystream)"
        ),
        .default(enabledTraits: ["SystemLibraries"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        // Every cryptographic primitive (AES-GCM, SHA-256, HMAC, HKDF, PBKDF2, scrypt, Ed25519):
        // the Swift ecosystem's own, CryptoKit on Apple platforms and BoringSSL elsewhere.
        .package(url: "https://github.com/apple/swift-crypto", from: "4.5.2"),
    ],
    targets: [
        // C libraries, each imported by exactly one Swift module: libzip by AssetPackZip, libcrypto
        // (OpenSSL 3: the AES-ECB keystream only) by AssetPackCrypto, zlib, libdeflate and libzstd by
        // AssetPackCore, libcurl by AssetPackHTTP.
        .systemLibrary(
            name: "CLibzip", pkgConfig: "libzip",
            providers: [.apt(["libzip-dev"]), .brew(["libzip"])]),
        .systemLibrary(
            name: "CLibcrypto", pkgConfig: "libcrypto",
            providers: [.apt(["libssl-dev"])]),
        .systemLibrary(
            name: "CLibdeflate", pkgConfig: "libdeflate",
            providers: [.apt(["libdeflate-dev"])]),
        .systemLibrary(
            name: "CZlib", pkgConfig: "zlib",
            providers: [.apt(["zlib1g-dev"])]),
        .systemLibrary(
            name: "CZstd", pkgConfig: "libzstd",
            providers: [.apt(["libzstd-dev"]), .brew(["zstd"])]),
        // libcurl is loaded when a URL is first opened (dlopen), not linked: linking it loaded it and
        // the ~33 libraries it needs at every command's start (docs/PERFORMANCE.md, "Process start").
        // curl.h (Debian: libcurl4-openssl-dev) gives the types; the shim resolves the calls.
        .target(name: "CLibcurl", linkerSettings: [.linkedLibrary("dl", .when(platforms: [.linux]))]),
        // A memory hint the Swift standard library does not offer (a prefetch), from a header;
        // AssetPackCore's `prefetchCacheLine` is its one caller.
        .target(name: "CMemoryHints"),

        // Backend-neutral vocabulary: reader protocol, errors, timing, CRC, paths, limits, the codecs.
        .target(
            name: "AssetPackCore",
            dependencies: [
                "CZlib", .target(name: "CLibdeflate", condition: system), .target(name: "CZstd", condition: system),
                "CMemoryHints",
            ]),
        // The cryptographic primitives, over swift-crypto: AES-256-GCM, SHA-256, HMAC, HKDF,
        // PBKDF2, scrypt, Ed25519, random bytes; libcrypto only for the AES-ECB keystream of
        // WinZip AES's little-endian counter. See docs/ARCHITECTURE.md, "Crypto".
        .target(
            name: "AssetPackCrypto",
            dependencies: [
                "AssetPackCore", .target(name: "CLibcrypto", condition: system),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "CryptoExtras", package: "swift-crypto"),
            ]),
        // What every pack format shares above the primitives: the format-driver protocol (the
        // seam between formats and byte sources) and the signature block.
        .target(name: "AssetPackFormat", dependencies: ["AssetPackCore", "AssetPackCrypto"]),
        // Zip backend over libzip.
        .target(
            name: "AssetPackZip",
            dependencies: [
                "AssetPackCore", "AssetPackCrypto", "AssetPackFormat", .target(name: "CLibzip", condition: system),
            ]),
        // Chunked AES-256-GCM container.
        .target(name: "AssetPackContainer", dependencies: ["AssetPackCore", "AssetPackCrypto", "AssetPackFormat"]),
        // Public face: the format registry, open, pack, install.
        .target(
            name: "AssetPack",
            dependencies: [
                "AssetPackCore", "AssetPackCrypto", "AssetPackFormat", "AssetPackZip", "AssetPackContainer",
            ]),
        // HTTP range requests (libcurl) into a sparse local mirror: a byte source any format reads,
        // and the resumable, delta download of a pack. Knows no format.
        .target(name: "AssetPackHTTP", dependencies: ["AssetPackCore", "CLibcurl"]),
        // Remote packs' public face: open(url:), install(from:), updates.
        .target(
            name: "AssetPackRemote",
            dependencies: ["AssetPack", "AssetPackCore", "AssetPackCrypto", "AssetPackFormat", "AssetPackHTTP"]),
        // `assetpack perf`: the zip-vs-container report. Not part of the AssetPack product: an app
        // never links it (as swift-nio keeps NIOPerformanceTester apart).
        .target(name: "AssetPackPerf", dependencies: ["AssetPack", "AssetPackRemote"]),
        // The CLI: parse, call the libraries, print. Crypto for `keygen` (PublisherSigningKey.generate).
        .executableTarget(
            name: "assetpack",
            dependencies: [
                "AssetPack", "AssetPackRemote", "AssetPackPerf", "AssetPackCrypto",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]),
        // The lean packing tool the PackAssets plugin runs: the AssetPack library and nothing else (no
        // ArgumentParser, no perf report), so an app's first build compiles little more than what it links.
        .executableTarget(name: "assetpack-pack", dependencies: ["AssetPack"]),
        // Runs assetpack-pack over a target's asset folder at build time (see Plugins/PackAssets).
        .plugin(name: "PackAssets", capability: .buildTool(), dependencies: ["assetpack-pack"]),

        // libFuzzer targets (see `make fuzz`); a plain build gets stubs.
        .target(name: "FuzzSupport", path: "Fuzz/FuzzSupport"),
        .executableTarget(name: "FuzzZip", dependencies: ["AssetPackZip", "FuzzSupport"], path: "Fuzz/FuzzZip"),
        .executableTarget(
            name: "FuzzZipStructure", dependencies: ["AssetPackZip", "FuzzSupport"], path: "Fuzz/FuzzZipStructure"),
        .executableTarget(
            name: "FuzzContainer", dependencies: ["AssetPackContainer", "FuzzSupport"], path: "Fuzz/FuzzContainer"),
        .executableTarget(
            name: "FuzzContainerIndex", dependencies: ["AssetPackContainer", "FuzzSupport"],
            path: "Fuzz/FuzzContainerIndex"),
        .executableTarget(name: "FuzzZstd", dependencies: ["AssetPackCore", "FuzzSupport"], path: "Fuzz/FuzzZstd"),
        .executableTarget(
            name: "FuzzSignature", dependencies: ["AssetPackZip", "AssetPackFormat", "FuzzSupport"],
            path: "Fuzz/FuzzSignature"),

        // Release-mode benchmarks of the two backends (swift run -c release ContainerBench / ZipAESBench).
        .executableTarget(
            name: "ContainerBench", dependencies: ["AssetPackContainer", "AssetPackCrypto"],
            path: "Benchmarks/Sources/ContainerBench"),
        .executableTarget(name: "ZipAESBench", dependencies: ["AssetPack"], path: "Benchmarks/Sources/ZipAESBench"),
        // make bench-pack: a zip pack at any libdeflate level, for the level sweep.
        .executableTarget(
            name: "ZipLevelBench", dependencies: ["AssetPackCore", "AssetPackZip"],
            path: "Benchmarks/Sources/ZipLevelBench"),
        // make bench-sets: reads through a PackSet against one pack, and opening a set.
        .executableTarget(name: "SetsBench", dependencies: ["AssetPack"], path: "Benchmarks/Sources/SetsBench"),
        // make bench-scale: opening packs of 1,000 to 1,000,000 entries, and a set of 10 × 100,000.
        .executableTarget(
            name: "ScaleBench", dependencies: ["AssetPack", "AssetPackCore"], path: "Benchmarks/Sources/ScaleBench"),
        // The zstd levels against libdeflate per container chunk: bytes, compress and decode speed
        // (docs/PERFORMANCE.md, "zstd levels"; Benchmarks/zstd-levels.sh).
        .executableTarget(
            name: "ZstdBench", dependencies: ["AssetPackCore", "AssetPackPerf"], path: "Benchmarks/Sources/ZstdBench"),
        // The HTTP client against a bare URLSession, for make bench-remote's transport comparison.
        .executableTarget(
            name: "TransportBench", dependencies: ["AssetPackHTTP"], path: "Benchmarks/Sources/TransportBench"),
        // make bench-portable: whole-entry reads through the library, built in either configuration.
        .executableTarget(name: "ReadBench", dependencies: ["AssetPack"], path: "Benchmarks/Sources/ReadBench"),
        // make bench-chunks: the content-defined chunker's sizes, chosen by measurement (docs/PERFORMANCE.md).
        .executableTarget(name: "ChunkBench", dependencies: ["AssetPackCore"], path: "Benchmarks/Sources/ChunkBench"),

        // Shared test helpers: temporary trees, deterministic bytes, running the built CLI.
        .target(
            name: "AssetPackTestSupport", dependencies: ["AssetPackCore"], path: "Tests/AssetPackTestSupport",
            resources: [.copy("fault_server.py")], swiftSettings: testSettings),
        // CZstd: the zstd tests build hostile frames with the library itself (a window no writer of ours uses).
        .testTarget(
            name: "AssetPackCoreTests",
            dependencies: ["AssetPackCore", "AssetPackTestSupport", .target(name: "CZstd", condition: system)],
            swiftSettings: testSettings),
        // The remote, perf and CLI suites need the default configuration (AssetPackHTTP needs libcurl,
        // the CLI both): in the portable build (`make portable`) their sources compile to nothing.
        // The test helpers' own tests (the fault-injecting HTTP server does what the remote tests rely on).
        .testTarget(
            name: "AssetPackTestSupportTests", dependencies: ["AssetPackTestSupport"], swiftSettings: testSettings),
        .testTarget(
            name: "AssetPackCryptoTests",
            dependencies: [
                "AssetPackCrypto", "AssetPackTestSupport", .target(name: "CLibcrypto", condition: system),
            ],
            swiftSettings: testSettings),
        .testTarget(
            name: "AssetPackFormatTests", dependencies: ["AssetPackFormat", "AssetPackCrypto", "AssetPackTestSupport"],
            swiftSettings: testSettings),
        .testTarget(
            name: "AssetPackZipTests",
            dependencies: [
                "AssetPackZip", "AssetPackCore", "AssetPackCrypto", .target(name: "CLibzip", condition: system),
                "AssetPackTestSupport",
            ],
            resources: [.copy("Vectors")], swiftSettings: testSettings),
        .testTarget(
            name: "AssetPackContainerTests",
            dependencies: [
                "AssetPackContainer", "AssetPackCore", "AssetPackCrypto", "AssetPackFormat", "AssetPackTestSupport",
            ],
            resources: [.copy("Vectors")], swiftSettings: testSettings),
        // The packs the library, remote and CLI suites start from, made one way (Fixtures.swift).
        .target(
            name: "AssetPackFixtures", dependencies: ["AssetPack", "AssetPackTestSupport"],
            path: "Tests/AssetPackFixtures", swiftSettings: testSettings),
        .testTarget(
            name: "AssetPackTests", dependencies: ["AssetPack", "AssetPackTestSupport", "AssetPackFixtures"],
            swiftSettings: testSettings),
        .testTarget(
            name: "AssetPackRemoteTests",
            dependencies: [
                .target(name: "AssetPackRemote", condition: system), .target(name: "AssetPackHTTP", condition: system),
                "AssetPackFormat", "AssetPackTestSupport", "AssetPackFixtures",
            ],
            swiftSettings: testSettings),
        .testTarget(
            name: "AssetPackPerfTests",
            dependencies: [.target(name: "AssetPackPerf", condition: system), "AssetPackTestSupport"],
            swiftSettings: testSettings),
        .testTarget(
            name: "AssetPackCLITests",
            dependencies: [
                "AssetPack", .target(name: "AssetPackRemote", condition: system),
                // In-process parse and usage-error tests (UsageErrorTests), as swift-argument-parser tests itself.
                .target(name: "assetpack", condition: system),
                .target(name: "AssetPackPerf", condition: system), "AssetPackTestSupport",
            ],
            swiftSettings: testSettings),
    ]
)
