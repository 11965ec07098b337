import ArgumentParser
import AssetPack
import AssetPackRemote
import Foundation

/// Where the password or key comes from. There is deliberately no flag that takes the
/// secret itself: command lines are visible to every user through `ps`.
struct CredentialOptions: ParsableArguments {
    @Option(
        name: .customLong("password-env"),
        help: ArgumentHelp(
            "Read the password from this environment variable (default: ASSETPACK_PASSWORD).", valueName: "NAME"))
    var passwordEnvOption: String?

    /// The environment variable the password is read from.
    var passwordEnv: String { passwordEnvOption ?? "ASSETPACK_PASSWORD" }

    @Option(
        name: .customLong("password-file"),
        help: ArgumentHelp("Read the password from the first line of this file.", valueName: "PATH"))
    var passwordFile: String?

    @Option(
        name: .customLong("key-file"),
        help: ArgumentHelp("Container only: a raw 32-byte key (binary, or 64 hex digits).", valueName: "PATH"))
    var keyFile: String?

    func validate() throws {
        let given = [passwordEnvOption != nil, passwordFile != nil, keyFile != nil].filter { $0 }.count
        if given > 1 { throw ValidationError("give only one of --password-env, --password-file and --key-file") }
    }

    /// The credential given without asking anyone, if any: an option, else the environment as
    /// the PackAssets plugin reads it (`$ASSETPACK_KEY_FILE`, `$ASSETPACK_PASSWORD_FILE`, then
    /// `$ASSETPACK_PASSWORD`), so one variable serves the build, the plugin and the command line.
    func given() throws -> PackCredential? {
        if let keyFile { return try PackCredential.keyFile(keyFile) }
        if let passwordFile { return try PackCredential.passwordFile(passwordFile) }
        let environment = ProcessInfo.processInfo.environment
        if passwordEnvOption == nil {
            if let path = environment["ASSETPACK_KEY_FILE"], !path.isEmpty { return try PackCredential.keyFile(path) }
            if let path = environment["ASSETPACK_PASSWORD_FILE"], !path.isEmpty {
                return try PackCredential.passwordFile(path)
            }
        }
        if let value = environment[passwordEnv], !value.isEmpty {
            return .password(value)
        }
        return nil
    }

    /// The credential, prompting on a terminal when none was given and `needed` says one is.
    func resolve(needed: Bool, confirm: Bool = false) throws -> PackCredential? {
        if let credential = try given() { return credential }
        guard needed else { return nil }
        guard isatty(STDIN_FILENO) == 1 else {
            // Set but empty (a CI secret that did not expand, say) is not "not set".
            let empty = ProcessInfo.processInfo.environment[passwordEnv]?.isEmpty == true
            throw AssetPackError(
                .missingPassword,
                "a password is needed: "
                    + (empty ? "$\(passwordEnv) is set but empty" : "set $\(passwordEnv)")
                    + (passwordEnvOption == nil
                        ? " (or $ASSETPACK_PASSWORD_FILE, or $ASSETPACK_KEY_FILE for a container key)" : "")
                    + ", or use --password-env, --password-file or --key-file")
        }
        let first = try Self.prompt("Password: ")
        if confirm {
            guard try Self.prompt("Repeat password: ") == first else {
                throw AssetPackError(.wrongPassword, "the passwords do not match")
            }
        }
        guard !first.isEmpty else { throw AssetPackError(.missingPassword, "no password entered") }
        return .password(first)
    }

    /// Opens a pack, asking for a password on a terminal only if the pack needs one for `forData`.
    /// With `trust`, the pack must be signed by one of those keys (exit 5 otherwise); a URL is
    /// read within `network`'s deadlines and bound.
    func open(_ path: String, forData: Bool, trust: TrustOptions, network: NetworkOptions) throws -> any PackReader {
        try openPack(path, forData: forData, trust: trust, network: network).reader
    }

    /// ``open(_:forData:trust:network:)``, with the pack's byte source (to check the whole pack
    /// afterwards without reading it again).
    func openPack(_ path: String, forData: Bool, trust: TrustOptions, network: NetworkOptions) throws -> (
        reader: any PackReader, source: any ByteSource
    ) {
        let keys = try trust.keys()
        let limits = try network.limits()
        let source: any ByteSource
        do {
            source = try AssetPacks.source(location: path, limits: limits, transfer: try network.transfer())
        } catch let error as AssetPackError {
            throw error.untrustedIfUnreadable(trusting: keys)
        }
        func open(_ credential: PackCredential?) throws -> any PackReader {
            try AssetPacks.open(source, credential: credential, limits: limits, trustedKeys: keys)
        }
        if AssetPacks.isRemote(path) {
            // One open of a remote pack: ask for a password up front only on a terminal.
            return (try open(try given() ?? (isatty(STDIN_FILENO) == 1 ? try resolve(needed: true) : nil)), source)
        }
        if let credential = try given() { return (try open(credential), source) }
        let plain: any PackReader
        do { plain = try open(nil) } catch let error as AssetPackError where error.code == .missingPassword {
            // A format that needs its credential to open at all (the container).
            return (try open(try resolve(needed: true)), source)
        }
        let encrypted = plain.entries.contains { $0.encryption != .none }
        guard forData && encrypted && isatty(STDIN_FILENO) == 1 else { return (plain, source) }
        return (try open(try resolve(needed: true)), source)
    }

    /// Reads a line from the terminal with echo off. Echo goes off before the prompt is written,
    /// so a password typed the moment the prompt appears is never shown; TCSANOW keeps what was
    /// typed ahead.
    static func prompt(_ label: String) throws -> String {
        var saved = termios()
        tcgetattr(STDIN_FILENO, &saved)
        var silent = saved
        silent.c_lflag &= ~tcflag_t(ECHO)
        tcsetattr(STDIN_FILENO, TCSANOW, &silent)
        FileHandle.standardError.write(Data(label.utf8))
        defer {
            tcsetattr(STDIN_FILENO, TCSANOW, &saved)
            FileHandle.standardError.write(Data("\n".utf8))
        }
        guard let line = readLine(strippingNewline: true) else {
            throw AssetPackError(.missingPassword, "no password entered")
        }
        return line
    }
}

/// `--trust NAME.pub`: the publisher keys a pack must be signed by. Public keys are not secret,
/// so they are files given on the command line (the app pins the same text in its code).
struct TrustOptions: ParsableArguments {
    @Option(
        name: .customLong("trust"),
        help: ArgumentHelp(
            "Accept the pack only if this publisher key signed it, every byte as signed (repeatable; exit 5 otherwise).",
            valueName: "NAME.pub"))
    var files: [String] = []

    /// The keys, loaded from their files.
    func keys() throws -> [PublisherKey] {
        try files.map { try PublisherKey.load(from: URL(fileURLWithPath: $0)) }
    }
}

/// Deadlines, the minimum rate, the download bound and the trusted CAs for packs read from a URL (docs/REMOTE.md,
/// "Deadlines"): what `TransferLimits` and `ReadLimits.maxPackSize` hold in the library.
struct NetworkOptions: ParsableArguments {
    @Option(help: ArgumentHelp("URLs: seconds connecting may take (default 10).", valueName: "SECONDS"))
    var connectTimeout: Double?
    @Option(help: ArgumentHelp("URLs: seconds one request may take (default 300).", valueName: "SECONDS"))
    var requestTimeout: Double?
    @Option(
        help: ArgumentHelp(
            "URLs: the slowest sustained rate, bytes per second over 10 s (K, M suffixes; default 4K).",
            valueName: "RATE"))
    var minRate: String?
    @Option(
        help: ArgumentHelp(
            "URLs: the largest pack to fetch or download, in bytes (K, M, G, T suffixes; default 16G).",
            valueName: "SIZE"))
    var maxDownload: String?
    @Option(
        help: ArgumentHelp(
            "https URLs: trust the certificate authorities in this PEM file instead of the system's (default: CURL_CA_BUNDLE, SSL_CERT_FILE, then the system's).",
            valueName: "FILE"))
    var caFile: String?

    func validate() throws {
        if let caFile,
            (try? FileSystem.stat(caFile))?.kind != .regular || !FileManager.default.isReadableFile(atPath: caFile)
        {
            throw ValidationError("--ca-file \(caFile): no such readable file")
        }
        for (name, value) in [("--connect-timeout", connectTimeout), ("--request-timeout", requestTimeout)] {
            if let value, !(value > 0 && value.isFinite) {
                throw ValidationError("\(name) must be a positive number of seconds")
            }
        }
        if let minRate { _ = try Self.bytes(minRate, option: "--min-rate") }
        if let maxDownload { _ = try Self.bytes(maxDownload, option: "--max-download") }
    }

    /// The transfer limits these options give.
    func transfer() throws -> TransferLimits {
        var limits = TransferLimits.default
        if let connectTimeout { limits.connectTimeout = connectTimeout }
        if let requestTimeout { limits.requestTimeout = requestTimeout }
        if let minRate { limits.minimumRate = Int(clamping: try Self.bytes(minRate, option: "--min-rate")) }
        if let caFile { limits.caCertificates = URL(fileURLWithPath: caFile) }
        return limits
    }

    /// The read limits these options give.
    func limits() throws -> ReadLimits {
        var limits = ReadLimits.default
        if let maxDownload { limits.maxPackSize = try Self.bytes(maxDownload, option: "--max-download") }
        return limits
    }

    /// `123`, `4K`, `10M`, `2G`, `1T` (binary multiples; a trailing `B` or `iB` is allowed).
    static func bytes(_ text: String, option: String) throws -> UInt64 {
        var digits = text.trimmingCharacters(in: .whitespaces).uppercased()
        for suffix in ["IB", "B"] where digits.hasSuffix(suffix) && digits.count > suffix.count {
            digits.removeLast(suffix.count)
            break
        }
        var shift: UInt64 = 0
        if let last = digits.last, let index = "KMGT".firstIndex(of: last) {
            shift = 10 * UInt64("KMGT".distance(from: "KMGT".startIndex, to: index) + 1)
            digits.removeLast()
        }
        guard let value = UInt64(digits), value <= UInt64.max >> shift else {
            throw ValidationError("\(option) takes a number of bytes, such as 4096, 64K, 10M or 2G (got '\(text)')")
        }
        return value << shift
    }
}
