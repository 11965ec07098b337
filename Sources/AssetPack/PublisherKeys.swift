import AssetPackCore
import AssetPackCrypto

// What the key vocabulary of AssetPackCore needs OpenSSL for, as apps and the CLI see it
// (AssetPackCrypto is not re-exported).

extension PublisherSigningKey {
    /// The public key that verifies this key's signatures: what apps that accept packs signed
    /// with this key hold.
    public var publicKey: PublisherKey { verifyingKey }

    /// A new random key from OpenSSL's random generator (what `assetpack keygen` writes).
    package static func generate() -> PublisherSigningKey {
        var seed = Ed25519PrivateKey().seed
        defer { seed.withUnsafeMutableBytes { cleanse($0) } }
        do { return try seed.withUnsafeBytes { try PublisherSigningKey(seed: $0) } } catch {
            preconditionFailure("\(error)")
        }
    }
}
