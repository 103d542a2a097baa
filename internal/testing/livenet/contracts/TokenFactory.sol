// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

import {DevToken} from "./DevToken.sol";

// TokenFactory creates DevToken contracts from a call (an internal CREATE).
contract TokenFactory {
    event TokenCreated(address indexed token, address indexed owner, string name, string symbol);

    address[] public tokens;

    function create(string calldata name_, string calldata symbol_, uint256 supply) external returns (address) {
        DevToken t = new DevToken(name_, symbol_, supply, msg.sender);
        tokens.push(address(t));
        emit TokenCreated(address(t), msg.sender, name_, symbol_);
        return address(t);
    }

    function count() external view returns (uint256) {
        return tokens.length;
    }
}
