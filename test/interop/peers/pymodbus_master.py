"""A Modbus TCP master built on pymodbus, for iogate's Modbus TCP server.

Runs every function code the server serves against one unit and prints one
JSON object: what each read returned, and for each write whether it was
accepted or the exception code it got. The test judges the writes at the
simulated board.
Usage: pymodbus_master.py PORT UNIT
"""
import json
import sys

from pymodbus.client import ModbusTcpClient


def outcome(response, field=None):
    if response.isError():
        return {"exception": getattr(response, "exception_code", None)}
    return getattr(response, field) if field else "ok"


def main():
    port, unit = int(sys.argv[1]), int(sys.argv[2])
    client = ModbusTcpClient("127.0.0.1", port=port, timeout=3, retries=0)
    if not client.connect():
        print(json.dumps({"error": "connect failed"}))
        return 1
    result = {
        "fc3": outcome(client.read_holding_registers(0, 2, slave=unit), "registers"),
        "fc4": outcome(client.read_input_registers(0, 1, slave=unit), "registers"),
        "fc1": outcome(client.read_coils(0, 4, slave=unit), "bits"),
        "fc2": outcome(client.read_discrete_inputs(0, 4, slave=unit), "bits"),
        "fc5": outcome(client.write_coil(2, True, slave=unit)),
        "fc15": outcome(client.write_coils(2, [False, True], slave=unit)),
        "fc6": outcome(client.write_register(1010, 321, slave=unit)),
        "fc16": outcome(client.write_registers(1010, [5, 6], slave=unit)),
        # This pymodbus takes the unit id of FC23 as `unit`, not `slave`.
        "fc23": outcome(client.readwrite_registers(read_address=1010, read_count=2, write_address=1011, write_registers=[9], unit=unit), "registers"),
        "interlocked": outcome(client.write_coils(0, [True, True], slave=unit)),
        "bad_unit": outcome(client.read_holding_registers(0, 1, slave=99)),
        "bad_address": outcome(client.read_holding_registers(500, 1, slave=unit)),
    }
    # Bits come in whole bytes; only the four asked for count.
    for key in ("fc1", "fc2"):
        if isinstance(result[key], list):
            result[key] = result[key][:4]
    client.close()
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
