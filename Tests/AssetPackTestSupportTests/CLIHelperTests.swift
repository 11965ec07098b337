import AssetPackTestSupport
import Testing

/// `CLI.run`'s cheap KDF: it adds `--scrypt-cost 10` only to a `pack` of a container with a password at
/// the default cost, so the tests that choose a cost, a key file or zip run what they say.
@Suite struct CLIHelperTests {
    @Test func theTestHelperLowersOnlyADefaultPasswordCost() {
        let pack = ["pack", "src", "--output", "o", "--format", "container"]
        #expect(CLI.withCheapKDF(pack) == pack + ["--scrypt-cost", "10"])
        #expect(CLI.withCheapKDF(pack + ["--scrypt-cost", "14"]) == pack + ["--scrypt-cost", "14"])
        #expect(CLI.withCheapKDF(pack + ["--key-file", "k"]) == pack + ["--key-file", "k"])
        #expect(CLI.withCheapKDF(["pack", "src", "--output", "o", "--format", "zip"]).count == 6)
        #expect(CLI.withCheapKDF(["cat", "p", "--format", "container"]).count == 4)
    }
}
