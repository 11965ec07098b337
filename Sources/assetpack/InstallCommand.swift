import ArgumentParser
import AssetPack
import Foundation

extension AssetPackCommand {
    struct Install: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Install a pack into a private directory (0700; pack 0600), atomically and idempotently.",
            discussion:
                "Prints the installed path. Without --into, installs into the app's default directory for --app-id."
        )

        @Argument(help: "The pack to install.") var pack: String
        @Option(help: "The private directory.") var into: String?
        @Option(help: "Install into $XDG_DATA_HOME/<app-id> (or ~/.local/share/<app-id>).") var appId: String?
        @Option(help: "The installed file's name (default: the pack's name).") var name: String?
        @OptionGroup var quiet: QuietOption
        @OptionGroup var trust: TrustOptions

        func validate() throws {
            if (into == nil) == (appId == nil) {
                throw ValidationError("give exactly one of --into DIR or --app-id ID")
            }
        }

        func run() throws {
            try reporting {
                _ = try AssetPacks.sniff(pack)  // refuse to install something that is not a pack
                let keys = try trust.keys()
                let installer =
                    if let into { PrivateInstaller(directory: URL(fileURLWithPath: into), trustedKeys: keys) } else {
                        try PrivateInstaller(appID: appId!, trustedKeys: keys)
                    }
                let result = try installer.install(URL(fileURLWithPath: pack), as: name)
                print(result.path.path)
                if !result.copied { quiet.say("assetpack: already installed and current") }
                if let publisher = result.publisher {
                    quiet.say("assetpack: signed by trusted key \(publisher.fingerprint)")
                }
            }
        }
    }
}
