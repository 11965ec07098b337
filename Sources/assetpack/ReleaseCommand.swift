import ArgumentParser
import AssetPack
import Foundation

extension AssetPackCommand {
    struct Release: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Write a signed release manifest naming packs, in order: what `install RELEASE.json` installs.",
            discussion: """
                Each pack must be signed by --sign-key (exit 5 otherwise): the manifest records its signed name and \
                version, its size and SHA-256, and its path relative to the manifest's folder (a pack must lie under \
                it: publish the packs beside the manifest). Installers refuse a release older than the one installed \
                (exit 5) and any pack that is not the one named. The manifest is canonical JSON (docs/FORMAT.md, \
                "Release manifest"). The summary goes to stderr (--quiet drops it).
                """)

        @Argument(help: "The release's packs, in order (a later pack overrides an earlier one).") var packs: [String]
        @Option(name: .shortAndLong, help: "The manifest to write (by convention NAME.json).") var output: String
        @Option(
            name: .customLong("sign-key"),
            help: ArgumentHelp("The publisher key that signed the packs, from assetpack keygen.", valueName: "NAME.key")
        )
        var signKey: String
        @Option(
            name: .customLong("release-name"),
            help: ArgumentHelp(
                "The name the signature binds (1 to 255 bytes; default: the output's file name without extension).",
                valueName: "NAME"))
        var releaseName: String?
        @Option(
            name: .customLong("release-version"),
            help: ArgumentHelp(
                "The release number (raise it with every release; installers refuse an older one).", valueName: "N"))
        var releaseVersion: UInt64
        @Option(
            help: ArgumentHelp(
                "When the release stops being trusted: an ISO 8601 date or date-time, or +N days or hours (+30d).",
                valueName: "DATE"))
        var expires: String?
        @OptionGroup var quiet: QuietOption

        func validate() throws {
            guard !packs.isEmpty else { throw ValidationError("give at least one pack") }
            if let releaseName {
                do { try PackRelease.checkName(releaseName) } catch let error as AssetPackError {
                    throw ValidationError("--release-name: \(error.message)")
                }
            }
            _ = try expiry(now: Date())
        }

        func expiry(now: Date) throws -> Date? {
            guard let expires else { return nil }
            do { return try PackRelease.futureExpiry(expires, now: now, of: "release").get() } catch {
                throw ValidationError(error.text)
            }
        }

        func run() throws {
            try reporting {
                let key = try PublisherSigningKey.load(from: URL(fileURLWithPath: signKey))
                let folder = URL(fileURLWithPath: AtomicFile.folder(of: output)).standardizedFileURL.path
                let entries = try packs.map { path in
                    let full = URL(fileURLWithPath: path).standardizedFileURL.path
                    guard full.hasPrefix(folder == "/" ? "/" : folder + "/") else {
                        throw AssetPackError(
                            .invalidArgument,
                            "pack \(path) is not under the manifest's folder \(folder): a release names its packs relative to itself"
                        )
                    }
                    let file = String(full.dropFirst(folder == "/" ? 1 : folder.count + 1))
                    return try ReleaseManifest.Pack.describing(path, file: file, signedBy: key.publicKey)
                }
                let manifest = try ReleaseManifest(
                    name: releaseName ?? PackRelease.defaultName(for: output), version: releaseVersion,
                    expires: try expiry(now: Date()), packs: entries)
                let document = manifest.document(signedWith: key)
                try AtomicFile.write(output, mode: 0o644) { fd in
                    try document.withUnsafeBytes { try FileOutput.writeAll(fd, $0, path: output) }
                }
                quiet.say(
                    "assetpack: wrote \(output): \(manifest.release.summary), \(plural(entries.count, "pack")), signed by key \(key.publicKey.fingerprint)"
                )
            }
        }
    }
}
