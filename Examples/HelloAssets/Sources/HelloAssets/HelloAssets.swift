import AssetPack
import Foundation

/// HelloAssets: the pack built from Sources/HelloAssets/Assets/ by the PackAssets plugin ships as a
/// resource of this target. At launch: find it with Bundle.module, install it into the app's private
/// directory (PrivateInstaller, through AssetLibrary.openInstalling: the first run copies, later runs
/// do not), open it, and read entries by path, verified and timed. With a publisher key in
/// HELLOASSETS_PUBLISHER_KEY (the line of NAME.pub), only a pack that key signed opens. With a patch
/// pack in HELLOASSETS_PATCH (made by `assetpack pack NEW --patch-of assets.pack`), the installed
/// pack and the patch are read as one PackSet: the patch's entries override, its deletions hide.
@main
struct HelloAssetsApp {
    static let appID = "com.example.hello-assets"
    static let paths = [
        "hello.txt", "data/config.json", "levels/level1.json", "images/gradient.png", "images/noise.bin",
    ]

    struct Config: Decodable {
        var title: String
        var startLevel: String
        var lives: Int
    }

    static func main() async {
        // The pack and its credential come from the build: the PackAssets plugin generated
        // PackedAssets (the resource's URL, and the key it packed with, masked) from the same
        // ASSETPACK_KEY_FILE it packed with. No secret to paste, no key derivation at launch.
        let bundled = PackedAssets.url
        let credential = PackedAssets.credential
        // A real app pastes the line of NAME.pub into its source (see the Security article); the
        // example takes it from the environment, so that `make example` can sign with a throwaway key.
        var trustedKeys: [PublisherKey] = []
        if let line = ProcessInfo.processInfo.environment["HELLOASSETS_PUBLISHER_KEY"], !line.isEmpty {
            do { trustedKeys = [try PublisherKey(text: line)] } catch { fail("HELLOASSETS_PUBLISHER_KEY: \(error)") }
        }
        do {
            // Install (a copy and a SHA-256 the first time) and open, off the main thread.
            let started = ContinuousClock.now
            var library = try await AssetLibrary.openInstalling(
                bundled: bundled, appID: appID, credential: credential, trustedKeys: trustedKeys)
            let took = ContinuousClock.now - started
            let milliseconds = Double(took.components.seconds) * 1e3 + Double(took.components.attoseconds) / 1e15
            print("openInstalling: \(String(format: "%.2f", milliseconds)) ms (install check and open)")
            if let installed = library.installation {
                let sha = installed.sha256.prefix(16)
                print(
                    installed.copied
                        ? "first run: copied the bundled pack into \(installed.path.path) (sha256 \(sha)…)"
                        : "already installed: \(installed.path.path) is current (sha256 \(sha)…), nothing copied")
            }
            if let patch = ProcessInfo.processInfo.environment["HELLOASSETS_PATCH"], !patch.isEmpty {
                // Base and patch as one set, bottom first: a path resolves to the last pack that has it.
                let set = try PackSet([
                    .init(name: "assets.pack", reader: library.reader),
                    .init(
                        name: "patch.pack",
                        reader: try AssetPacks.open(patch, credential: credential, trustedKeys: trustedKeys)),
                ])
                library = AssetLibrary(reader: set, url: library.url, installation: library.installation)
                print("patched: reading assets.pack with \(patch) over it")
            }
            print(
                "opened \(library.format.rawValue) pack: \(library.entries.count) entries, "
                    + "open \(ms(library.reader.openSeconds)) ms (key derivation included)")

            if let key = trustedKeys.first, let release = library.reader.release {
                print(
                    "signed by publisher key \(key.fingerprint): \(release.name ?? "(unnamed)") version \(release.version), "
                        + (release.expires.map { "expires \($0)" } ?? "never expires"))
            }
            print(
                "path".padding(toLength: 22, withPad: " ", startingAt: 0)
                    + "  size  crc32     total ms  (lookup / key / decrypt / crc, ms)")
            for path in paths {
                guard library.entry(path) != nil else {
                    print(path.padding(toLength: 22, withPad: " ", startingAt: 0) + "  deleted by the patch")
                    continue
                }
                let (bytes, timing) = try await library.loadTimed(path)
                // The CRC the pack records (the read already checked the bytes against it).
                let crc = library.entry(path)?.crc32.map { String(format: "%08x", $0) } ?? "-       "
                print(
                    path.padding(toLength: 22, withPad: " ", startingAt: 0)
                        + String(format: "%6ld", bytes.count) + "  " + crc + "  " + leftPadded(ms(timing.total), 8)
                        + "  (\(ms(timing.lookup)) / \(ms(timing.keyDerivation)) / \(ms(timing.decrypt)) / \(ms(timing.crc)))"
                        + (timing.pack.map { "  from \($0)" } ?? "")
                )
            }

            let config = try library.decode(Config.self, from: "data/config.json")
            print("config: \"\(config.title)\", start at \(config.startLevel), \(config.lives) lives")
            print(String(decoding: try await library.load("hello.txt"), as: UTF8.self), terminator: "")
        } catch let error as AssetPackError {
            fail(
                "\(error) [\(error.code)]",
                code: error.code == .wrongPassword || error.code == .missingPassword
                    ? 2 : error.code == .untrusted ? 5 : 1)
        } catch {
            fail("\(error)")
        }
    }

    static func ms(_ seconds: Double) -> String { String(format: "%.3f", seconds * 1000) }

    static func leftPadded(_ text: String, _ width: Int) -> String {
        text.count >= width ? text : String(repeating: " ", count: width - text.count) + text
    }

    static func fail(_ message: String, code: Int32 = 1) -> Never {
        FileHandle.standardError.write(Data("HelloAssets: error: \(message)\n".utf8))
        exit(code)
    }
}
