"""File formats at PyFlink's path (``pyflink.datastream.formats``): not there yet; lockgate
reads and writes text lines (``StreamFormat.text_line_format()``, ``Encoder``)."""
