"""Provider adapters behind the SPI in :mod:`bridge.spi`: the built-in scripted provider
and the real agent CLIs."""
