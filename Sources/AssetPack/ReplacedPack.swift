import AssetPackCore
import AssetPackFormat
import Foundation

/// The pack a write replaces at its output, looked at before the write (with
/// ``PackOptions/describesReplacedPack``), so the summary of every packer (the CLI, the build
/// plugin's tool, an app's own) counts the entries the new pack removed and warns where
/// installers trusting the replaced pack's key will refuse or pay for the new one.
struct ReplacedPack {
    /// The replaced pack's signature block (checked against its own key), if it was signed.
    private let block: PackSignature?
    private let entries: PreviousEntries

    /// Looks at the pack at `output` (a regular file only: opening a FIFO there would wait for
    /// a writer). Its entries are listed now, on another thread, when the writer will not count
    /// what it removed (`listNow`); else only if it did not.
    init(output: String, credential: PackCredential?, listNow: Bool) {
        block =
            (try? FileSystem.stat(output))?.kind == .regular
            ? (try? AssetPacks.signature(at: output)) ?? nil : nil
        entries = PreviousEntries(of: output, credential: credential, listNow: listNow)
    }

    /// `summary` with what replacing this pack did: `removed` (when the writer did not count
    /// it) and the warnings.
    func describe(_ summary: AssetPacks.PackSummary, output: String, signedBy key: PublisherKey?)
        -> AssetPacks.PackSummary
    {
        var summary = summary
        if summary.removed == nil {
            summary.removed = entries.paths.map { $0.subtracting(summary.files.map(\.path)).count }
        }
        if let block {
            summary.warnings += replacementWarnings(
                publisher: block.publisher, release: block.release, body: block.bodyDigest, signedBy: key,
                output: output)
        }
        return summary
    }
}

/// The warnings for a pack just written over a signed one in a way installers trusting its key
/// will refuse or pay for: unsigned now (a re-pack without --sign-key), signed by another key
/// (apps must trust it, and nothing was reused), under another signed name (installers refuse
/// it under the installed file's name), or the same version of the same name with another
/// signed body (other content or expiry; pack refuses a lower version itself).
/// (`publisher`, `release`, `body`: the replaced pack's signature block.)
private func replacementWarnings(
    publisher: PublisherKey, release: PackRelease, body: [UInt8], signedBy key: PublisherKey?, output: String
) -> [String] {
    guard let key else {
        return [
            "\(output) was signed by key \(publisher.fingerprint) as \(release.summary); this pack is not signed, so installers that trust that key will refuse it (give --sign-key to sign it)"
        ]
    }
    guard publisher == key else {
        return [
            "\(output) was signed by key \(publisher.fingerprint) as \(release.summary); this pack is signed by key \(key.fingerprint): installers must trust that key (--trust) to take it, and nothing of the previous pack was reused, so every installed copy downloads it whole"
        ]
    }
    let written = (try? AssetPacks.signature(at: output)) ?? nil
    if let name = release.name, let written, let now = written.release.name, now != name {
        return [
            "\(output) was \(release.printableName) version \(release.version); this pack is \(written.release.printableName): installers that installed \(release.printableName) under this file name refuse a pack of another name there (keep --pack-name, or publish it under another file name)"
        ]
    }
    guard release.name != nil, release.version > 0, let written,
        written.release.name == release.name, written.release.version == release.version,
        written.bodyDigest != body
    else { return [] }
    return [
        "\(output) is again \(release.printableName) version \(release.version), but not the version \(release.version) it replaced (its signed bytes differ: other content or expiry): installers that installed that one will refuse this one; raise --pack-version"
    ]
}

/// The entry paths of the pack at an output before `pack` replaces it, which the summary's
/// "removed" counts against. Read from a descriptor opened before the pack starts, so the old pack
/// is what is listed even if the new one has replaced it by then: on another thread while the pack
/// is written (`listNow`), or when first asked for (a container's listing costs one more key
/// derivation, 70–170 ms at the default cost, which a re-pack that counts "removed" itself never pays).
final class PreviousEntries: @unchecked Sendable {
    private let done = DispatchGroup()
    private let lock = NSLock()
    private var fd: FileDescriptor?
    private let credential: PackCredential?
    private var listed: Set<String>?

    /// Opens the pack at `output`, and with `listNow` starts listing it with `credential` (and,
    /// for a zip, whose names need none, without).
    init(of output: String, credential: PackCredential?, listNow: Bool) {
        self.credential = credential
        guard (try? FileSystem.lstat(output)) != nil else {
            listed = []  // no pack before: nothing removed
            return
        }
        guard let status = try? FileSystem.stat(output), status.kind == .regular else { return }
        fd = try? FileDescriptor.open(output, .readOnly)
        guard listNow, fd != nil else { return }
        done.enter()
        DispatchQueue.global().async { [self] in
            defer { done.leave() }
            list()
        }
    }

    deinit { try? fd?.close() }

    /// Lists the pack once, then closes it.
    private func list() {
        lock.lock()
        defer { lock.unlock() }
        guard let fd else { return }
        defer {
            try? fd.close()
            self.fd = nil
        }
        for attempt in [credential, nil] {
            if let reader = try? AssetPacks.open("/dev/fd/\(fd.rawValue)", credential: attempt) {
                // A listing cannot throw: a damaged index lists what it cannot read as empty
                // names, which would count as removed. Checked first, "removed" is left out.
                if (try? reader.checkIndex()) != nil { listed = Set(reader.entries.map(\.path)) }
                return
            }
        }
    }

    /// The paths, once listed: none when there was no pack, `nil` when it did not open (a
    /// container under another password: its names are encrypted too) or its index is damaged.
    var paths: Set<String>? {
        done.wait()
        list()  // a no-op when it was listed (or never opened)
        lock.lock()
        defer { lock.unlock() }
        return listed
    }
}
