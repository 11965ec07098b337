import AssetPack
import AssetPackCore
import AssetPackCrypto
import AssetPackFormat
import AssetPackHTTP
import Foundation

/// A ``RemoteDownload`` of a pack, with what its format says about it: checked before the bulk
/// download (structure, signature block, a way to check an unsigned pack), filled as a delta
/// from the installed pack where the format can name identical spans, and verified whole
/// before it is installed. The format is asked through its driver; nothing here knows a layout.
struct PackDownload {
    var download: RemoteDownload
    /// The remote pack's format, once its structure was read.
    private var driver: (any PackFormatDriver)?
    /// The pack's signature block (checked against its own key), and the server's `.sha256` text.
    private(set) var signature: PackSignature?
    private var sidecar: String?
    private let url: String

    init(_ download: RemoteDownload, url: String) {
        self.download = download
        self.url = url
    }

    var reused: UInt64 { download.reused }
    var resumed: UInt64 { download.resumed }
    var stagingPath: String { download.stagingPath }

    /// What is checked before the bulk download: the pack's structure is fetched (within
    /// `limits`); a signed pack's block must be intact and, with `trustedKeys`, by one of them;
    /// an unsigned pack must be checkable once downloaded: by `credential` (every entry read
    /// back) or by a `.sha256` file the server publishes.
    /// - Throws: `.untrusted` (not signed, or not by a trusted key, or not a pack at all when
    ///   keys are trusted), `.missingPassword` (an unsigned pack nothing could check),
    ///   `.limitExceeded`, `.integrityFailure`, `.unsupportedFormat`, `.remote`.
    mutating func checkBeforeDownload(
        trustedKeys: [PublisherKey], credential: PackCredential?, limits: ReadLimits, client: HTTPRangeClient
    ) throws {
        guard let mirror = download.mirror else { return }
        do {
            let driver = try AssetPacks.driver(of: mirror)
            self.driver = driver
            signature = try driver.signature(mirror, limits: limits)
        } catch let error as AssetPackError {
            throw error.untrustedIfUnreadable(trusting: trustedKeys)
        }
        do { sidecar = try client.sidecar(suffix: ".sha256") } catch let error as AssetPackError
            where signature != nil && error.code == .remote
        {
            // A signed pack is checked by its signature: a sidecar the server fails to serve
            // (401, 410, 500) does not stop the install.
            sidecar = nil
        }
        if let block = signature {
            // Not a trust decision: a pack whose signed size is not the server's would fail its
            // own signature once downloaded.
            if let signed = block.release.size, signed != mirror.size {
                // Bytes after the signed end: what an interrupted re-pack of a container leaves
                // (a local reader ignores them; a download is bounded by the signed size).
                let after =
                    signed < mirror.size
                    ? " (\(mirror.size - signed) byte\(mirror.size - signed == 1 ? "" : "s") after the signed end: an interrupted re-pack of a container leaves them, and the next re-pack cuts them; otherwise the file is damaged)"
                    : ""
                throw AssetPackError(
                    .integrityFailure,
                    "\(url): the server claims \(mirror.size) bytes; the pack's signature says \(signed)\(after)")
            }
            if !trustedKeys.isEmpty && !trustedKeys.contains(block.publisher) {
                throw AssetPackError(
                    .untrusted, "\(url) is signed by key \(block.publisher.fingerprint), which is not a trusted key")
            }
            return
        }
        if !trustedKeys.isEmpty {
            throw AssetPackError(.untrusted, "\(url) is not signed, and trusted keys were given")
        }
        if credential == nil && sidecar == nil {
            throw AssetPackError(
                .missingPassword,
                "\(url) is not signed: an unsigned pack from a URL is installed only if it can be checked once downloaded. Give its password or key (every entry is read back), publish \(url).sha256, or sign the pack"
            )
        }
        // An unsigned pack is read back with the credential once downloaded: where opening checks
        // it (a container's key commitment), a wrong one is found now, from the structure already
        // fetched, not after the download. (A zip's password is checked per entry, on its data.)
        if let credential, driver?.checksCredentialAtOpen == true {
            do { _ = try driver?.open(mirror, credential: credential, limits: limits, trustedKeys: []) } catch var error
                as AssetPackError where error.code == .wrongPassword || error.code == .missingPassword
            {
                error.message = "\(url): \(error.message) (nothing was downloaded beyond its header and index)"
                throw error
            }
        }
    }

    /// Fills the staging file: spans reused from `previous` where the format names them
    /// identical, the rest downloaded in batches, the progress saved after each.
    mutating func assemble(
        previous: String?, credential: PackCredential?, limits: ReadLimits,
        progress: (@Sendable (UInt64, UInt64) -> Void)?
    ) throws {
        if let previous {
            // An installed pack that cannot be read is simply not reused.
            _ = try? reuse(from: previous, credential: credential, limits: limits)
        }
        try download.fetchRest(progress: progress)
    }

    /// Copies every span of `previous` that is identical to one of the remote pack: by the
    /// signed SHA-256 of each span a signature lists, or (unsigned) by the format's stored
    /// identities. Both packs must be of one format.
    private mutating func reuse(from previous: String, credential: PackCredential?, limits: ReadLimits) throws {
        guard let driver, let mirror = download.mirror else { return }
        let installed = try FileByteSource(path: previous)
        guard try driver.recognizes(installed) else { return }
        if let block = signature {
            guard let wanted = try driver.signedSpans(mirror, credential: credential, limits: limits),
                wanted.count == block.itemCount,
                let available = try driver.signedSpans(installed, credential: credential, limits: limits)
            else { return }
            var byDigest: [[UInt8]: Range<UInt64>] = [:]
            for span in available {
                try Cancellation.current?.check()
                byDigest[try SHA256Hasher.digest(of: installed, span)] = span
            }
            let keyed = wanted.enumerated().map { i, span in (key: Array(block.items[32 * i..<32 * i + 32]), span: span)
            }
            try download.copy(keyed, from: byDigest, of: installed)
            return
        }
        guard let theirs = try driver.storedIdentities(mirror, credential: credential, limits: limits),
            let ours = try driver.storedIdentities(installed, credential: credential, limits: limits),
            theirs.keys == ours.keys
        else { return }
        // The copies are read back (decrypted and CRC-checked) by `verify`, like every entry of
        // an unsigned pack.
        let byIdentity = Dictionary(ours.entries.map { ($0.identity, $0.span) }, uniquingKeysWith: { a, _ in a })
        try download.copy(theirs.entries.map { (key: $0.identity, span: $0.span) }, from: byIdentity, of: installed)
    }

    /// The update of the installed pack at `path` in place, when its format allows one
    /// (``PackFormatDriver/appendPlan(installed:remote:)``): the remote's new header and tail
    /// are downloaded into the staging file, and the pack they make with the installed bytes
    /// they keep is verified as a whole download is, before anything of the installed file is
    /// written. `nil` when the format has no plan, or the result is not the remote pack (the
    /// installed one is not an earlier generation of it): a whole install follows, which
    /// reuses what was fetched.
    /// - Returns: The plan, the spliced pack and what its verification found (SHA-256, key).
    /// - Throws: `.remote`, `.io`, `CancellationError`.
    mutating func prepareUpdateInPlace(
        installed path: String, trustedKeys: [PublisherKey], credential: PackCredential?,
        progress: (@Sendable (UInt64, UInt64) -> Void)?
    ) throws -> (plan: AppendPlan, pack: SplicedByteSource, checked: (String, PublisherKey?))? {
        guard let driver, let mirror = download.mirror, let installed = try? FileByteSource(path: path),
            let plan = try? driver.appendPlan(installed: installed, remote: mirror)
        else { return nil }
        // Whether the remote's publisher zeroes what a version no longer names (0.4 on): the
        // installed version's index, dead in every later version, then reads as zeros on the
        // server (0.3 left it: sealed bytes, never 32 zeros). Its last 32 bytes, which end where
        // the tail starts: one range with it, 32 bytes more (its first 32 bytes cost a request
        // of their own, or the whole index where the fetch joins near ranges).
        let probe = plan.zeroed.first.map { $0.upperBound - min(32, UInt64($0.count))..<$0.upperBound }
        try download.fetch([plan.head] + (probe.map { [$0] } ?? []) + [plan.tail], progress: progress)
        let zeroes =
            try probe.map { try mirror.bytes(at: $0.lowerBound, count: $0.count).allSatisfy { $0 == 0 } } ?? false
        // What the remote version no longer names, in the bytes kept: a publisher that zeroes
        // (docs/FORMAT.md, "Version 6") zeroed them, and so does the update once it is committed.
        // The plan zeroes the installed version's index (its header says where); with the
        // credential, the remote's index says what else (removed or replaced chunks). A remote
        // that does not zero is installed as it is, so that the installed file is the server's
        // byte for byte either way.
        var plans: [AppendPlan]
        if zeroes {
            plans = [plan]
            var unzeroed = plan
            unzeroed.zeroed = []
            if let credential,
                let dead = try? driver.deadRanges(
                    unzeroed.result(installed: installed, remote: mirror, name: url), credential: credential,
                    limits: .default)
            {
                var zeroing = plan
                zeroing.zeroed = dead.compactMap { range in
                    let r = range.clamped(to: plan.kept)
                    return r.isEmpty ? nil : r
                }
                if zeroing != plan { plans.insert(zeroing, at: 0) }
            }
        } else {
            var unzeroed = plan
            unzeroed.zeroed = []
            plans = [unzeroed]
        }
        for plan in plans {
            let pack = plan.result(installed: installed, remote: mirror, name: url)
            do {
                return (plan, pack, try verify(pack, trustedKeys: trustedKeys, credential: credential))
            } catch let error as AssetPackError where [.integrityFailure, .untrusted].contains(error.code) {
                continue
            }
        }
        return nil
    }

    /// Checks the assembled file: the server's `.sha256`, when there is one; a signed pack's
    /// signature on every byte (against `trustedKeys`, or its own key: the assembled bytes must
    /// be the ones the block describes); an unsigned pack's every entry, read back with
    /// `credential` (chunk tags or MACs, CRC-32s). Bytes of two versions fail one of these.
    /// - Returns: Its SHA-256 (hex) and the key that signed it.
    func verify(trustedKeys: [PublisherKey], credential: PackCredential?) throws -> (String, PublisherKey?) {
        guard download.isComplete else { throw AssetPackError(.integrityFailure, "the download is incomplete") }
        return try verify(FileByteSource(path: download.stagingPath), trustedKeys: trustedKeys, credential: credential)
    }

    /// ``verify(trustedKeys:credential:)`` of the pack `source` holds: the staging file, or what
    /// an update in place will make of the installed pack (``SplicedByteSource``).
    func verify(_ source: any ByteSource, trustedKeys: [PublisherKey], credential: PackCredential?) throws -> (
        String, PublisherKey?
    ) {
        let digest = try PrivateInstaller.sha256(of: source)
        if let sidecar {
            let published = sidecar.split(whereSeparator: \.isWhitespace).first.map { $0.lowercased() }
            guard published == digest else {
                throw AssetPackError(
                    .integrityFailure,
                    "the downloaded pack's SHA-256 is \(digest), not the \(published ?? "(empty)") the server publishes"
                )
            }
        }
        var publisher: PublisherKey?
        if signature != nil {
            if trustedKeys.isEmpty {
                _ = try AssetPacks.intactSignature(
                    source, what: "the pack downloaded from \(url)",
                    why: "it is damaged, or changed on the server during the download")
            } else {
                do { publisher = try AssetPacks.trustedSignature(source, trusting: trustedKeys).publisher } catch var
                    error
                    as AssetPackError where error.code == .untrusted
                {
                    // Its key was checked before the download: what fails now is the bytes.
                    error.message =
                        "the pack downloaded from \(url): \(error.message) (it is damaged, or changed on the server during the download)"
                    throw error
                }
            }
        } else if let credential {
            try readBack(source, credential: credential)
        }
        return (digest, publisher)
    }

    /// Reads every entry of the unsigned download with its credential: each container chunk's
    /// tag and each zip entry's MAC and CRC-32 are checked, so a file assembled from two
    /// versions (a pack replaced on the server under the same validators) is refused.
    private func readBack(_ source: any ByteSource, credential: PackCredential) throws {
        do {
            let reader = try AssetPacks.open(source, credential: credential)
            try reader.checkIndex()  // the whole index (a container opens its segments as reads reach them)
            for entry in reader.entries {
                try Cancellation.current?.check()
                try reader.stream(entry.path) { _ in }
            }
        } catch let error as AssetPackError
            where error.code != .missingPassword && error.code != .wrongPassword && error.code != .io
        {
            throw AssetPackError(
                .integrityFailure,
                "the pack downloaded from \(url) does not read back (\(error.description)): it changed on the server during the download, or is damaged",
                path: error.path)
        }
    }
}
