import AssetPackCore
import AssetPackCrypto

// What the key vocabulary of AssetPackCore needs OpenSSL for, as apps and the CLI see it
// (AssetPackCrypto is not re-exported).

extension PublisherSigningKey {
    /// The public key that verifies this key's signatures: what apps that accept packs signed
    /// with this key hold.
    public var publicKey: PublisherKey { verifyingKey }
}
