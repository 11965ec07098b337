import AssetPackCore
import AssetPackCrypto
import AssetPackFormat
import Dispatch
import Foundation

// A re-pack with a password derives the previous pack's key (scrypt, ~90 ms) before it can read
// that pack's index, and scans its sources (a few ms for the 1,013-file benchmark tree, seconds
// for a million files) before it writes: two pieces of work that need nothing of each other,
// done one after the other on a machine with a second core idle. A prefetch starts the
// derivation first, on another thread; the re-pack's open of the previous pack takes its result
// instead of deriving again.

/// The master key of a password-protected container, being derived on another thread for the
/// first open of that pack with that password (``ContainerKeys/master(_:header:)``): one-shot,
/// matched on the password, salt, KDF and parameters, and withdrawn by ``finish()``.
package final class ContainerKeyPrefetch: PackKeyPrefetch, @unchecked Sendable {
    /// What the derivation is of: SHA-256 of the normalized password, salt, KDF and parameters
    /// (so the password itself is not kept here).
    private let inputs: [UInt8]
    private let done = DispatchSemaphore(value: 0)
    private var result: [UInt8]?
    private let lock = NSLock()
    private var taken = false

    private static let lock = NSLock()
    nonisolated(unsafe) private static var pending: [ContainerKeyPrefetch] = []

    /// Starts deriving the key of the container at `output` with `credential`; `nil` when there
    /// is nothing to derive ahead: no such container, a raw key, or KDF parameters `limits`
    /// refuse (a crafted header never costs more than an open with those limits would let it).
    /// An open checks more before it derives (the index's size, the file's length): a damaged
    /// pack at the output, or one the re-pack then does not open (a signed re-pack of a pack
    /// this key did not sign), costs a derivation on another thread that nothing takes.
    package static func start(output: String, credential: PackCredential, limits: ReadLimits) -> ContainerKeyPrefetch? {
        guard case .password = credential, let source = try? FileByteSource(path: output) else { return nil }
        guard let header = try? ContainerHeader.read(from: source).header, header.kdf != .none,
            (try? header.checkKDF(limits)) != nil
        else { return nil }
        let prefetch = ContainerKeyPrefetch(inputs: inputs(credential, header: header))
        lock.withLock { pending.append(prefetch) }
        DispatchQueue.global(qos: .userInitiated).async {
            let key = try? ContainerKeys.derive(credential, header: header)
            prefetch.lock.withLock { prefetch.result = key }
            prefetch.done.signal()
        }
        return prefetch
    }

    private init(inputs: [UInt8]) { self.inputs = inputs }

    /// The key a prefetch derived for exactly these inputs (waiting for it), taken once; `nil`
    /// when none was started for them, or its derivation failed (the caller derives itself).
    static func take(_ credential: PackCredential, header: ContainerHeader) -> [UInt8]? {
        guard case .password = credential else { return nil }
        let wanted = inputs(credential, header: header)
        let prefetch = lock.withLock { () -> ContainerKeyPrefetch? in
            guard let i = pending.firstIndex(where: { $0.inputs == wanted }) else { return nil }
            return pending.remove(at: i)
        }
        guard let prefetch else { return nil }
        prefetch.done.wait()  // taken out of `pending` above: no one else waits on it
        return prefetch.lock.withLock {
            prefetch.taken = true
            defer { prefetch.result = nil }  // handed over: no copy stays here
            return prefetch.result
        }
    }

    /// Whether an open took this prefetch's key.
    package var wasTaken: Bool { lock.withLock { taken } }

    /// Withdraws the prefetch (a re-pack that did not open the pack, or failed first): no later
    /// open takes it. Its thread, if still deriving, finishes on its own.
    package func finish() {
        Self.lock.withLock { Self.pending.removeAll { $0 === self } }
        lock.withLock { result = nil }
    }

    private static func inputs(_ credential: PackCredential, header: ContainerHeader) -> [UInt8] {
        guard case .password(let password) = credential else { return [] }
        let hasher = SHA256Hasher()
        let pw = Array(password.precomposedStringWithCanonicalMapping.utf8)
        withUnsafeBytes(of: UInt64(pw.count).littleEndian) { hasher.update($0) }
        hasher.update(pw)
        hasher.update(header.salt)
        hasher.update([header.kdf.rawValue])
        for p in header.params { withUnsafeBytes(of: p.littleEndian) { hasher.update($0) } }
        return hasher.finalize()
    }
}
