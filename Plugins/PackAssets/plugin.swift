import Foundation
import PackagePlugin

/// Packs a target's asset folder into an encrypted pack during `swift build`, as a resource of
/// that target (find it at run time with `Bundle.module.url(forResource:withExtension:)`).
///
/// The build command runs `assetpack-pack`, a lean tool over the AssetPack library (no argument
/// parser, no perf report), not the `assetpack` CLI; see Sources/assetpack-pack for its arguments.
///
/// Convention: the folder `Assets` in the target's directory. An optional `assetpack.json` in the
/// target's directory configures it (every key optional):
///
///     { "source": "Assets", "format": "container", "compression": "auto", "level": "default",
///       "output": "assets.pack", "signingKey": "keys/publisher.key", "packName": "assets", "packVersion": 3, "expires": "+90d",
///       "scryptCost": 13 }
///
/// `"scryptCost"` is `assetpack pack --scrypt-cost`: a container's password costs 2^N of scrypt at
/// every open (10 to 18; 15 when absent): lower it for slow devices. Not with a raw key.
///
/// The secret comes from the environment of `swift build`, checked in this order:
/// `ASSETPACK_KEY_FILE` (path of a raw 32-byte key, container only: `assetpack keygen --pack-key`
/// makes one; `"keyFile"` in assetpack.json names it too, the environment winning),
/// `ASSETPACK_PASSWORD_FILE` (path of a file whose first line is the password), `ASSETPACK_PASSWORD`
/// (the password itself). Without one the build fails with a message saying what to set. The
/// `assetpack` command line reads the same variables in the same order.
///
/// The app gets the same secret from the build: the plugin also generates `PackedAssets.swift`
/// into the target (`PackedAssets.url`, the pack resource, and `PackedAssets.credential`, its key
/// or password kept as two masked halves joined at first use; docs/SECURITY.md, "The pack key in
/// the app"). `"generateCredential": false` in assetpack.json leaves it out.
///
/// Signing (optional): the publisher signing key (`NAME.key` from `assetpack keygen`) comes from
/// `ASSETPACK_SIGNING_KEY_FILE` in the environment of `swift build` or, when that is unset or
/// empty, from `"signingKey"` in `assetpack.json`; the environment wins, so a CI job can sign with a
/// key kept out of the repository. Relative paths are relative to the package's directory. A key
/// that is named but cannot be read fails the build with a message naming the path and the
/// setting. `"packName"`, `"packVersion"` and `"expires"` are what `assetpack pack --pack-name`,
/// `--pack-version` and `--expires` take; without a signing key they are ignored, with a warning.
/// The key file is an input of the pack command (a new key re-packs); a signed pack is packed
/// fresh (nothing reused from the previous output in the build directory).
@main
struct PackAssets: BuildToolPlugin {
    func createBuildCommands(context: PluginContext, target: Target) async throws -> [Command] {
        // Reported as a diagnostic, not thrown: SwiftPM printed a thrown plugin error twice.
        do { return try commands(context: context, target: target) } catch let error as PackAssetsError {
            Diagnostics.error(error.description)
            return []
        }
    }

    func commands(context: PluginContext, target: Target) throws -> [Command] {
        guard let target = target as? SourceModuleTarget else { return [] }
        let targetDirectory = target.directoryURL
        let configURL = targetDirectory.appendingPathComponent(Config.fileName)
        let config = try Config.load(configURL, target: target.name)

        let source = targetDirectory.appendingPathComponent(config.source, isDirectory: true)
        let inputs = try Self.files(below: source, target: target.name, folder: config.source)
        let output = context.pluginWorkDirectoryURL.appendingPathComponent(config.output)
        let tool = try context.tool(named: "assetpack-pack")

        var arguments = [
            source.path, output.path, "--format", config.format, "--compression", config.compression,
            "--level", config.level,
        ]
        if let cost = config.scryptCost { arguments += ["--scrypt-cost", String(cost)] }
        var environment: [String: String] = [:]
        var inputFiles = inputs
        if FileManager.default.fileExists(atPath: configURL.path) { inputFiles.append(configURL) }

        let env = ProcessInfo.processInfo.environment
        let keySetting: (name: String, path: String)? =
            env["ASSETPACK_KEY_FILE"].flatMap { $0.isEmpty ? nil : ("ASSETPACK_KEY_FILE", $0) }
            ?? config.keyFile.map { ("\"keyFile\" in \(Config.fileName)", $0) }
        if let (setting, keyFile) = keySetting {
            guard config.format == "container" else {
                throw PackAssetsError(
                    target.name,
                    "\(setting) gives a raw key, which only the container format takes; "
                        + "set \"format\": \"container\" in \(Config.fileName), or use ASSETPACK_PASSWORD instead")
            }
            let url = Self.absolute(keyFile, relativeTo: context.package.directoryURL)
            guard FileManager.default.isReadableFile(atPath: url.path) else {
                throw PackAssetsError(
                    target.name,
                    "\(setting) names \(url.path), which cannot be read "
                        + "(make a key with `assetpack keygen --pack-key --out NAME` and name NAME.packkey)")
            }
            guard config.scryptCost == nil else {
                throw PackAssetsError(
                    target.name,
                    "\"scryptCost\" in \(Config.fileName) applies to passwords; \(setting) gives a raw key")
            }
            arguments += ["--key-file", url.path]
            inputFiles.append(url)
        } else if let passwordFile = env["ASSETPACK_PASSWORD_FILE"], !passwordFile.isEmpty {
            let url = Self.absolute(passwordFile, relativeTo: context.package.directoryURL)
            guard FileManager.default.isReadableFile(atPath: url.path) else {
                throw PackAssetsError(target.name, "ASSETPACK_PASSWORD_FILE names \(url.path), which cannot be read")
            }
            arguments += ["--password-file", url.path]
            inputFiles.append(url)
        } else if let password = env["ASSETPACK_PASSWORD"], !password.isEmpty {
            // Build commands get the environment given here; the password never goes on a command line.
            environment["ASSETPACK_PASSWORD"] = password
            arguments += ["--password-env", "ASSETPACK_PASSWORD"]
        } else {
            throw PackAssetsError(
                target.name,
                "no key or password to encrypt \(config.source)/ with: make a pack key with "
                    + "`assetpack keygen --pack-key --out keys/assets` and set ASSETPACK_KEY_FILE=keys/assets.packkey "
                    + "in the environment of `swift build` (or \"keyFile\" in \(Config.fileName)); "
                    + "or set ASSETPACK_PASSWORD_FILE=path or ASSETPACK_PASSWORD")
        }
        // The app's side of the secret: PackedAssets.url and PackedAssets.credential, compiled into the target.
        var outputFiles = [output]
        if config.generateCredential {
            let source = context.pluginWorkDirectoryURL.appendingPathComponent("PackedAssets.swift")
            arguments += ["--swift-credential", source.path]
            outputFiles.append(source)
        }

        if let signing = try Self.signingKey(
            config: config, configURL: configURL, context: context, target: target.name)
        {
            arguments += ["--sign-key", signing.path]
            inputFiles.append(signing)
            if let packName = config.packName { arguments += ["--pack-name", packName] }
            if let packVersion = config.packVersion { arguments += ["--pack-version", String(packVersion)] }
            if let expires = config.expires { arguments += ["--expires", expires] }
        } else {
            let release = [
                config.packName.map { _ in "packName" }, config.packVersion.map { _ in "packVersion" },
                config.expires.map { _ in "expires" },
            ].compactMap { $0 }
            if !release.isEmpty {
                Diagnostics.warning(
                    "PackAssets (target \(target.name)): \(release.joined(separator: ", ")) in \(Config.fileName) "
                        + "ignored: no signing key is set (\"signingKey\" in \(Config.fileName) "
                        + "or ASSETPACK_SIGNING_KEY_FILE), so \(config.output) is not signed")
            }
        }

        let displayName =
            "Packing assets of \(target.name) from \(config.source) into \(config.output) (\(config.format))"
        guard FileManager.default.fileExists(atPath: configURL.path) else {
            return [
                .buildCommand(
                    displayName: displayName, executable: tool.url, arguments: arguments, environment: environment,
                    inputFiles: inputFiles, outputFiles: outputFiles)
            ]
        }
        // SwiftPM runs this plugin only when it re-plans the build (files added or removed, Package.swift
        // or the environment changed), not when a file's contents change. The command re-runs when
        // assetpack.json changes (it is an input), but with the arguments planned from the old contents.
        // So keep a copy of what was planned, and have the command refuse to pack when they differ.
        let planned = context.pluginWorkDirectoryURL.appendingPathComponent(config.output + ".planned-config")
        try Self.writeIfChanged(FileManager.default.contents(atPath: configURL.path) ?? Data(), to: planned)
        let guardScript = """
            config="$1"; planned="$2"; shift 2
            if ! cmp -s "$config" "$planned"; then
              echo "error: PackAssets: $config changed after SwiftPM planned this build, and SwiftPM re-runs \
            build-tool plugins only when it re-plans: touch Package.swift, then build again" >&2
              exit 1
            fi
            exec "$@"
            """
        return [
            .buildCommand(
                displayName: displayName,
                executable: URL(fileURLWithPath: "/bin/sh"),
                arguments: ["-c", guardScript, "PackAssets", configURL.path, planned.path, tool.url.path] + arguments,
                environment: environment,
                inputFiles: [tool.url] + inputFiles,
                outputFiles: outputFiles)
        ]
    }

    /// The publisher signing key's file: `ASSETPACK_SIGNING_KEY_FILE` when set and not empty, else
    /// `"signingKey"` in assetpack.json, relative paths against the package's directory; `nil` when
    /// neither is given.
    /// - Throws: `PackAssetsError` naming the setting and the path when the file cannot be read.
    static func signingKey(config: Config, configURL: URL, context: PluginContext, target: String) throws -> URL? {
        let setting: String
        let path: String
        if let fromEnvironment = ProcessInfo.processInfo.environment["ASSETPACK_SIGNING_KEY_FILE"],
            !fromEnvironment.isEmpty
        {
            setting = "ASSETPACK_SIGNING_KEY_FILE"
            path = fromEnvironment
        } else if let fromConfig = config.signingKey {
            setting = "\"signingKey\" in \(configURL.path)"
            path = fromConfig
        } else {
            return nil
        }
        let url = absolute(path, relativeTo: context.package.directoryURL)
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: url.path, isDirectory: &isDirectory), !isDirectory.boolValue,
            FileManager.default.isReadableFile(atPath: url.path)
        else {
            throw PackAssetsError(
                target,
                "\(setting) names the signing key \(url.path), which cannot be read "
                    + "(create a key pair with `assetpack keygen --out NAME`, and name NAME.key)")
        }
        return url
    }

    /// Writes `data` unless the file already holds exactly it (so its timestamp only moves on change).
    static func writeIfChanged(_ data: Data, to url: URL) throws {
        if FileManager.default.contents(atPath: url.path) == data { return }
        try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        try data.write(to: url, options: .atomic)
    }

    /// Every regular file below `folder`, sorted; these are the command's inputs, so a change to any
    /// of them (or to the list) re-runs it.
    static func files(below folder: URL, target: String, folder name: String) throws -> [URL] {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: folder.path, isDirectory: &isDirectory), isDirectory.boolValue
        else {
            throw PackAssetsError(target, "no asset folder \(folder.path) (set \"source\" in \(Config.fileName))")
        }
        guard
            let walker = FileManager.default.enumerator(
                at: folder, includingPropertiesForKeys: [.isRegularFileKey], options: [])
        else { throw PackAssetsError(target, "cannot list \(folder.path)") }
        var files: [URL] = []
        for case let url as URL in walker {
            let values = try? url.resourceValues(forKeys: [.isRegularFileKey])
            if values?.isRegularFile == true { files.append(url) }
        }
        guard !files.isEmpty else { throw PackAssetsError(target, "the asset folder \(name)/ is empty") }
        return files.sorted { $0.path < $1.path }
    }

    static func absolute(_ path: String, relativeTo base: URL) -> URL {
        path.hasPrefix("/") ? URL(fileURLWithPath: path) : base.appendingPathComponent(path)
    }
}

/// `assetpack.json`: how the plugin packs one target's assets.
struct Config: Decodable {
    static let fileName = "assetpack.json"

    /// The asset folder, relative to the target's directory.
    var source = "Assets"
    /// `zip` or `container`.
    var format = "container"
    /// `auto`, `store` or `deflate`.
    var compression = "auto"
    /// `default` (smaller packs, for release) or `fast` (quicker packing, for iteration): as
    /// `assetpack pack --level`.
    var level = "default"
    /// The pack's file name; the resource is found by it at run time.
    var output = "assets.pack"
    /// The publisher signing key's file (`NAME.key`), relative to the package's directory;
    /// `ASSETPACK_SIGNING_KEY_FILE` in the environment wins over it.
    var signingKey: String?
    /// With a signing key: the name the signature binds (default: `output` without its extension).
    var packName: String?
    /// With a signing key: the release number the signature binds (default 0: unversioned).
    var packVersion: UInt64?
    /// With a signing key: when the signature stops being trusted, as `assetpack pack --expires`
    /// takes it (an ISO 8601 date or date-time, or `+30d` / `+12h` from the build).
    var expires: String?
    /// A container password's scrypt cost, log2 N (10 to 18), as `assetpack pack --scrypt-cost`.
    var scryptCost: Int?
    /// The raw container key's file (`NAME.packkey` from `assetpack keygen --pack-key`), relative to
    /// the package's directory; `ASSETPACK_KEY_FILE` in the environment wins over it.
    var keyFile: String?
    /// Whether to generate `PackedAssets.swift` into the target: the pack's URL and its credential
    /// (default true; false when the app gets its secret another way).
    var generateCredential = true

    init() {}

    init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        source = try c.decodeIfPresent(String.self, forKey: .source) ?? source
        format = try c.decodeIfPresent(String.self, forKey: .format) ?? format
        compression = try c.decodeIfPresent(String.self, forKey: .compression) ?? compression
        level = try c.decodeIfPresent(String.self, forKey: .level) ?? level
        output = try c.decodeIfPresent(String.self, forKey: .output) ?? output
        signingKey = try c.decodeIfPresent(String.self, forKey: .signingKey)
        packName = try c.decodeIfPresent(String.self, forKey: .packName)
        packVersion = try c.decodeIfPresent(UInt64.self, forKey: .packVersion)
        expires = try c.decodeIfPresent(String.self, forKey: .expires)
        scryptCost = try c.decodeIfPresent(Int.self, forKey: .scryptCost)
        keyFile = try c.decodeIfPresent(String.self, forKey: .keyFile)
        generateCredential = try c.decodeIfPresent(Bool.self, forKey: .generateCredential) ?? generateCredential
    }

    enum CodingKeys: String, CodingKey, CaseIterable {
        case source, format, compression, level, output, signingKey, packName, packVersion, expires, scryptCost,
            keyFile, generateCredential
    }

    static func load(_ url: URL, target: String) throws -> Config {
        guard let data = FileManager.default.contents(atPath: url.path) else { return Config() }
        let config: Config
        do {
            if let object = try JSONSerialization.jsonObject(with: data) as? [String: Any] {
                let known = Set(CodingKeys.allCases.map(\.rawValue))
                if let unknown = object.keys.sorted().first(where: { !known.contains($0) }) {
                    throw PackAssetsError(
                        target,
                        "\(url.path): unknown key \"\(unknown)\" (known: "
                            + CodingKeys.allCases.map(\.rawValue).joined(separator: ", ") + ")")
                }
            }
            config = try JSONDecoder().decode(Config.self, from: data)
        } catch let error as PackAssetsError {
            throw error
        } catch {
            throw PackAssetsError(target, "\(url.path) is not valid: \(error)")
        }
        guard ["zip", "container"].contains(config.format) else {
            throw PackAssetsError(
                target, "\(url.path): \"format\" must be \"zip\" or \"container\", not \"\(config.format)\"")
        }
        guard ["auto", "store", "deflate"].contains(config.compression) else {
            throw PackAssetsError(
                target,
                "\(url.path): \"compression\" must be \"auto\", \"store\" or \"deflate\", not \"\(config.compression)\""
            )
        }
        guard ["default", "fast"].contains(config.level) else {
            throw PackAssetsError(
                target, "\(url.path): \"level\" must be \"default\" or \"fast\", not \"\(config.level)\"")
        }
        if let cost = config.scryptCost {
            guard config.format == "container", (10...18).contains(cost) else {
                throw PackAssetsError(
                    target, "\(url.path): \"scryptCost\" is for \"format\": \"container\", from 10 to 18, not \(cost)")
            }
        }
        guard !config.output.isEmpty, !config.output.contains("/"), !config.output.hasPrefix(".") else {
            throw PackAssetsError(target, "\(url.path): \"output\" must be a plain file name such as \"assets.pack\"")
        }
        guard !config.source.isEmpty, !config.source.hasPrefix("/"),
            !config.source.split(separator: "/").contains("..")
        else {
            throw PackAssetsError(target, "\(url.path): \"source\" must be a folder inside the target's directory")
        }
        for (key, value) in [
            ("signingKey", config.signingKey), ("packName", config.packName), ("expires", config.expires),
            ("keyFile", config.keyFile),
        ]
        where value?.isEmpty == true {
            throw PackAssetsError(target, "\(url.path): \"\(key)\" must not be empty (leave it out instead)")
        }
        return config
    }
}

/// A build-stopping error that names the target.
struct PackAssetsError: Error, CustomStringConvertible {
    var description: String
    init(_ target: String, _ message: String) { description = "PackAssets (target \(target)): \(message)" }
}
