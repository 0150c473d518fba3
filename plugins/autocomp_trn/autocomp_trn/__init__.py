"""autocomp-trn: the AWS Trainium (NKI) backend of autocomp, with a NumPy NKI emulator and cost model."""

__version__ = "0.1.0"
