"""The checks a Modbus TCP to RTU gateway must pass, as pymodbus sees them.

The same round trips mbusd's own integration suite asks of a gateway: write
coils and read them back, flip one, read discrete inputs (and the register
the boards report them in), input registers,
write holding registers and read them back, get exception 02 for a coil the
board does not have, and a write to the broadcast unit 0. It prints one JSON
object with every answer; the test judges them against the simulated board
on the far end of the RTU line, and judges the writes there.
Usage: pymodbus_gateway_checks.py PORT UNIT COILS(0/1,...) REGISTERS(n,...)
"""
import json
import sys

from pymodbus.client import ModbusTcpClient


def answer(response, field=None):
    if response.isError():
        return {"exception": getattr(response, "exception_code", None), "function": getattr(response, "original_code", None)}
    if field is None:
        return {"address": getattr(response, "address", None), "count": getattr(response, "count", None), "value": getattr(response, "value", None)}
    return getattr(response, field)


def main():
    port, unit = int(sys.argv[1]), int(sys.argv[2])
    coils = [part == "1" for part in sys.argv[3].split(",")]
    registers = [int(part) for part in sys.argv[4].split(",")]
    client = ModbusTcpClient("127.0.0.1", port=port, timeout=3, retries=0)
    if not client.connect():
        print(json.dumps({"error": "connect failed"}))
        return 1
    n = len(coils)
    result = {}
    result["fc15"] = answer(client.write_coils(0, coils, slave=unit))
    result["fc1_after_fc15"] = answer(client.read_coils(0, n, slave=unit), "bits")
    result["fc5"] = answer(client.write_coil(0, not coils[0], slave=unit))
    result["fc1_after_fc5"] = answer(client.read_coils(0, 1, slave=unit), "bits")
    result["fc2"] = answer(client.read_discrete_inputs(0, n, slave=unit), "bits")
    result["fc3_inputs"] = answer(client.read_holding_registers(0, 1, slave=unit), "registers")
    result["fc4"] = answer(client.read_input_registers(0, 2, slave=unit), "registers")
    base = 1010
    result["fc16"] = answer(client.write_registers(base, registers, slave=unit))
    result["fc3_after_fc16"] = answer(client.read_holding_registers(base, len(registers), slave=unit), "registers")
    result["fc6"] = answer(client.write_register(base, (registers[0] + 1) % 65535, slave=unit))
    result["fc3_after_fc6"] = answer(client.read_holding_registers(base, 1, slave=unit), "registers")
    result["coil_out_of_map"] = answer(client.write_coil(1000, False, slave=unit))
    result["broadcast"] = answer(client.write_registers(base, [r + 100 for r in registers], slave=0))
    # Bits come in whole bytes; only the ones asked for count.
    for key, count in (("fc1_after_fc15", n), ("fc1_after_fc5", 1), ("fc2", n)):
        if isinstance(result[key], list):
            result[key] = result[key][:count]
    client.close()
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
