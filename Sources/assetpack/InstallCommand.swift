import ArgumentParser
import AssetPack
import AssetPackRemote
import Foundation

extension AssetPackCommand {
    struct Install: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Install a pack into a private directory (0700; pack 0600), atomically and idempotently.",
            discussion:
                "Prints the installed path on stdout, and on stderr what was installed (NAME and its size), unless it was already installed and current, or --quiet. A release manifest (NAME.json, from assetpack release; a path or a URL) installs every pack it names, each checked against the manifest's size and SHA-256 (exit 5 otherwise), packs already installed costing nothing, then switches to the new release at once: an interrupted install leaves the previous release whole. It prints the installed packs' paths, in the release's order. Without --into, installs into the app's default directory for --app-id. A URL (http:// or https://) is downloaded by range requests: resumable after an interruption, and, when an older version is installed under the same name, only the entries that changed are downloaded (signed packs; unsigned containers given their password or key; a container always needs it for this). From a server that ignores Range, the whole file is downloaded in one request, without resume. The password options are used only for that. A pack from a file is copied and compared with its source byte for byte; its content is checked only when it is signed (against its own key, or the --trust keys): an unsigned pack is not read back. See docs/REMOTE.md."
        )

        @Argument(
            help:
                "The pack to install: a path, or an http:// or https:// URL; a name ending in .json is a release manifest (assetpack release)."
        ) var pack: String
        @Option(help: "The private directory.") var into: String?
        @Option(help: "Install into $XDG_DATA_HOME/<app-id> (or ~/.local/share/<app-id>).") var appId: String?
        @Option(help: "The installed file's name (default: the pack's name).") var name: String?
        @Flag(
            help:
                "With --trust: install a signed pack even if it is older than the version of its name installed before (refused by default as a rollback, exit 5). An expired pack is refused all the same."
        )
        var allowRollback = false
        @Flag(
            help:
                "A release manifest (NAME.json) only: install a release of another name than the release installed in the directory, replacing that release line (refused by default, exit 5: a directory holds one release line). The new name's own version record still applies."
        )
        var replaceRelease = false
        @OptionGroup var quiet: QuietOption
        @OptionGroup var trust: TrustOptions
        @OptionGroup var network: NetworkOptions
        @OptionGroup var credentials: CredentialOptions

        func validate() throws {
            if (into == nil) == (appId == nil) {
                throw ValidationError("give exactly one of --into DIR or --app-id ID")
            }
            if into?.isEmpty == true { throw ValidationError("--into needs a directory (got an empty path)") }
            if Self.isRelease(pack) && name != nil {
                throw ValidationError("--name names one pack: a release's packs are named by its manifest")
            }
        }

        func run() throws {
            try reporting { try offeringRollback(install) }
        }

        /// A refused rollback (or another release under an installed version) says how to
        /// install it all the same.
        private func offeringRollback(_ body: () throws -> Void) throws {
            do { try body() } catch var error as AssetPackError
                where error.code == .untrusted
                && (error.message.hasPrefix("rollback: ")
                    || error.message.hasSuffix("a new release must have a higher version"))
            {
                error.message += " (--allow-rollback installs it all the same)"
                throw error
            }
        }

        private func install() throws {
            let keys = try trust.keys()
            if Self.isRelease(pack) { return try installRelease(keys) }
            if AssetPacks.isRemote(pack) { return try installRemote(keys) }
            // Refuse to install something that is not a pack: under --trust, untrusted (exit 5),
            // as the readers say for the same file.
            do { _ = try AssetPacks.sniff(pack) } catch let error as AssetPackError {
                throw error.untrustedIfUnreadable(trusting: keys)
            }
            let result = try installer(keys).install(URL(fileURLWithPath: pack), as: name)
            print(result.path.path)
            if result.copied {
                let size = (try? FileSystem.stat(result.path.path).size) ?? 0
                quiet.say("assetpack: installed \(result.path.lastPathComponent) (\(size) bytes)")
            } else {
                quiet.say("assetpack: already installed and current")
            }
            if let publisher = result.publisher {
                quiet.say("assetpack: signed by trusted key \(publisher.fingerprint)")
            }
        }

        func installer(_ keys: [PublisherKey]) throws -> PrivateInstaller {
            var installer =
                if let into {
                    PrivateInstaller(
                        directory: URL(fileURLWithPath: into), trustedKeys: keys, allowRollback: allowRollback)
                } else {
                    try PrivateInstaller(appID: appId!, trustedKeys: keys, allowRollback: allowRollback)
                }
            installer.replacesReleaseLine = replaceRelease
            return installer
        }

        private func installRemote(_ keys: [PublisherKey]) throws {
            guard let url = URL(string: pack) else {
                throw AssetPackError(.invalidArgument, "\(pack) is not a valid URL")
            }
            let progress = ProgressLine(enabled: !quiet.quiet && isatty(STDERR_FILENO) == 1, unit: nil)
            // (Said before the download starts too, and for a server that ignores Range, where
            // nothing is kept: the same install is the way on in every case.)
            Interrupts.onInterrupt(
                say:
                    "nothing was installed; the same install goes on from what was downloaded (where the server answers Range requests)"
            )
            let result = try installer(keys).installRemote(
                url, as: name, credential: try credentials.given(), limits: try network.limits(),
                options: .init(transfer: try network.transfer()),
                progress: { done, total in
                    progress.update(
                        done: Int(done >> 20), total: Int(total >> 20), label: url.lastPathComponent,
                        bytes: (done, total))
                })
            progress.finish()
            print(result.installation.path.path)
            if !result.installation.copied {
                quiet.say("assetpack: already installed and current (\(plural(result.requests, "request")))")
            } else {
                let reuse =
                    result.updatedInPlace
                    ? "reused \(result.reused) bytes of the installed pack in place (appended the rest)"
                    : "reused \(result.reused) bytes from the installed pack"
                let whole =
                    result.rangesIgnored
                    ? " (the server ignores Range requests: no delta update and no resume from it)" : ""
                quiet.say(
                    "assetpack: downloaded \(result.downloaded) bytes in \(plural(result.requests, "request"))\(whole), \(reuse)"
                        + (result.resumed > 0 ? ", resumed \(result.resumed) bytes downloaded before" : "")
                        + "; \(result.written) bytes written")
            }
            if let publisher = result.installation.publisher {
                quiet.say("assetpack: signed by trusted key \(publisher.fingerprint)")
            }
        }
    }
}

extension AssetPackCommand.Install {
    /// Whether `location` names a release manifest: its path (a URL's path) ends in `.json`.
    static func isRelease(_ location: String) -> Bool {
        let path = AssetPacks.isRemote(location) ? (URL(string: location)?.path ?? location) : location
        return path.lowercased().hasSuffix(".json")
    }

    func installRelease(_ keys: [PublisherKey]) throws {
        let result = try installer(keys).installRelease(
            location: pack, credential: try credentials.given(), limits: try network.limits(),
            options: .init(transfer: try network.transfer()))
        for url in result.release.packs { print(url.path) }
        let manifest = result.release.manifest
        let packs = manifest.packs.count
        if !result.switched && result.copied.isEmpty {
            quiet.say("assetpack: release \(manifest.release.summary) already installed and current")
        } else {
            quiet.say(
                "assetpack: installed release \(manifest.release.summary): \(plural(packs, "pack")), \(result.copied.count) copied or downloaded, \(packs - result.copied.count) already installed"
                    + (result.requests > 0
                        ? "; downloaded \(result.downloaded) bytes in \(plural(result.requests, "request")), reused \(result.reused) bytes"
                        : ""))
        }
        if let publisher = result.release.manifest.publisher, !keys.isEmpty {
            quiet.say("assetpack: signed by trusted key \(publisher.fingerprint)")
        }
    }
}
