import AssetPackCore
import AssetPackCrypto
import Foundation

extension PublisherSigningKey {
    /// Reads a private key file (`NAME.key` from `assetpack keygen`).
    ///
    /// Its public key is derived here, once (``publicKey``). This is the one member of the key
    /// types that lives in the AssetPack module: a signing key is made with its public key, deriving
    /// one needs OpenSSL (AssetPackCrypto, which apps do not import), and Core, which parses the
    /// file, has no OpenSSL.
    /// - Parameter url: The file.
    /// - Throws: ``AssetPackError`` with code `invalidArgument` naming the file when it does not
    ///   hold a private signing key (the message never repeats the file's content), `io` when it
    ///   cannot be read.
    public static func load(from url: URL) throws -> PublisherSigningKey {
        try readSeed(from: url) { try PublisherSigningKey(seed: $0) }
    }
}
